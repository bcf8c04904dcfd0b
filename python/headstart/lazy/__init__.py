"""Lazy loading: which of a program's libraries nothing uses before it is ready, and what forbids
deferring each (plan.py, from the ELF facts of elf_facts.py); stub archives that load one at its
first call (build.py, resolver.c). docs/lazy.md."""
