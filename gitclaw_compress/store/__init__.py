"""The git storage layer: the archive ref, remotes, atomic session writes."""
