"""`headstart link`: what the loader does for each object of an exec'd launch, and which link-time
changes would cut it (docs/linking.md)."""
