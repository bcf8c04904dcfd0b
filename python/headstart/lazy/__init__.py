"""Lazy loading: which of a program's libraries nothing uses before it is ready, and what forbids
deferring each (plan.py, from the ELF facts of elf_facts.py). The stubs that would defer them are not
built yet (docs/lazy.md)."""
