"""headstart bench: launches timed in every mode, relocations, memory, preload scaling, repeated launches."""
