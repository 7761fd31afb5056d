"""gitclaw-compress: restorable compression of agent session transcripts kept in git."""

__version__ = "0.1.0"
