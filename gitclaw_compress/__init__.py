"""gitclaw-compress: restorable compression of agent session transcripts kept in git."""

__version__ = "0.2.0"
