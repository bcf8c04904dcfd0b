"""headstart boot: a serial console recorded with host timestamps, and boot logs read into one timeline."""
