"""curation stage of qaflow (filled in by later issues)."""
