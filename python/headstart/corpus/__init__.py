"""The corpus run (issue 30): every dynamically linked ELF program of a fixed list of Debian packages
(corpus/packages.txt), the daemon's verdict on each, and each served one launched through a real
headstartd and by exec with the same arguments and input, compared byte for byte.

`make corpus` runs it over the whole list (`python -m headstart.corpus`); tests/test_corpus_run.py
runs a small fixed slice of it."""
