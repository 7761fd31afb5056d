"""One use case per module on top of the core and the store: runs, the commit flow."""
