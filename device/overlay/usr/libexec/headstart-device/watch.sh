# Sourced by home-screen and app-agent: window-shown, the first-frame observer, started with its
# lines on fd 5 ("watching WAYLAND_DISPLAY=PATH", then "shown") and its errors in $watch_errors.
# weston tells systemd it is ready a moment before its socket accepts connections: tried again
# for up to 5 s. Sets $watcher (its pid) and $watch_display (the proxy's socket), or returns 1.
watch_errors=$XDG_RUNTIME_DIR/window-shown.err
watch_start() {
	local fifo=$XDG_RUNTIME_DIR/window-shown.$$ line attempt
	for attempt in 1 2 3 4 5 6 7 8 9 10; do
		rm -f "$fifo" && mkfifo -m 0600 "$fifo"
		/usr/libexec/headstart-device/window-shown >"$fifo" 2>"$watch_errors" &
		watcher=$!
		exec 5<"$fifo"
		rm -f "$fifo"
		if read -r line <&5 && [ "${line#watching WAYLAND_DISPLAY=}" != "$line" ]; then
			watch_display=${line#watching WAYLAND_DISPLAY=}
			return 0
		fi
		wait "$watcher"
		exec 5<&-
		sleep 0.5
	done
	return 1
}
watch_stop() {
	kill -TERM "$watcher" 2>/dev/null
	wait "$watcher" 2>/dev/null
	exec 5<&-
}
