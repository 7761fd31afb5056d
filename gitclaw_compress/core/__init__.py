"""The pure core: raw lines in, lines and archived payloads out. No git, no click."""
