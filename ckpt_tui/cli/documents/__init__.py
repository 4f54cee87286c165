"""The documents the command line prints: the `ls` listing and the `prune` plan (text and JSON)."""
