/* SPDX-License-Identifier: MIT */
/* The first frame of a Wayland client's first toplevel, read from the bytes of one connection as
 * they pass (wayland-watch.c forwards them). Only the requests that lead to it are followed:
 *   wl_display.get_registry -> wl_registry.bind of "wl_compositor" and "xdg_wm_base"
 *   -> wl_compositor.create_surface -> xdg_wm_base.get_xdg_surface -> xdg_surface.get_toplevel
 *   -> wl_surface.attach of a buffer (not null) -> wl_surface.commit of that toplevel's surface.
 * That commit is the first frame handed to the compositor: xdg-shell forbids a buffer before the
 * toplevel's first configure is acknowledged, so no earlier commit can carry one. Events are read
 * only for wl_display.delete_id, after which the client may reuse an object id for anything, and
 * wl_display.error, a protocol error by which the compositor ends the connection (a frame it then
 * refused was never shown: weston's kiosk shell refuses a window larger than its output).
 * The opcodes are those of wayland.xml (1.21) and the stable xdg-shell.xml (wayland-protocols 1.31).
 * Pure: no I/O, no allocation beyond the object table. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* libwayland's own limit on one message (WL_MAX_MESSAGE_SIZE, 4096 in 1.21). */
#define WL_FRAMES_MAX_MESSAGE 4096

struct wl_flow {
        uint8_t msg[WL_FRAMES_MAX_MESSAGE]; /* the message being assembled */
        size_t have;
};

struct wl_object {
        uint8_t kind;      /* enum in wayland-frames.c */
        uint8_t flags;     /* a surface's: toplevel role, buffer attached since its last commit */
        uint32_t surface;  /* an xdg_surface's wl_surface */
};

struct wl_frames {
        struct wl_flow requests, events;
        struct wl_object *objects; /* indexed by client-allocated id */
        uint32_t nobjects;
        bool shown;  /* a toplevel's first frame was committed */
        bool lost;   /* a message we could not frame: nothing more is read (the bytes still pass) */
        char error[192]; /* the first wl_display.error: "object N, code C: message"; "" when none */
};

/* Bytes the client sent (requests) or the compositor sent (events), in order. */
void wl_frames_requests(struct wl_frames *f, const uint8_t *p, size_t n);
void wl_frames_events(struct wl_frames *f, const uint8_t *p, size_t n);
void wl_frames_free(struct wl_frames *f);
