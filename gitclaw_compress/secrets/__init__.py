"""Secrets in transcripts: find them (engine, walk, scan), accept them (baseline), remove
them (redact). Nothing here ever prints or stores a secret: findings carry its hash and a
mask of at most its first and last two characters."""
