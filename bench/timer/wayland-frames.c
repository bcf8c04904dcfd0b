/* SPDX-License-Identifier: MIT */
#include "wayland-frames.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The wire (wayland's "Wire Format"): each message is the object id (u32), then the size in bytes
 * of the whole message (header included) << 16 | the opcode (u32), then its arguments, every one
 * a multiple of 4 bytes in the host's byte order. A string is its length with the NUL (u32), then
 * its bytes padded to 4; a new_id of no fixed interface (wl_registry.bind) is the interface as a
 * string, the version (u32), then the id. */
#define HEADER 8

/* Opcodes, from wayland.xml and xdg-shell.xml. */
#define WL_DISPLAY_ID 1
#define WL_DISPLAY_GET_REGISTRY 1
#define WL_DISPLAY_EVENT_ERROR 0
#define WL_DISPLAY_EVENT_DELETE_ID 1
#define WL_REGISTRY_BIND 0
#define WL_COMPOSITOR_CREATE_SURFACE 0
#define WL_SURFACE_ATTACH 1
#define WL_SURFACE_COMMIT 6
#define XDG_WM_BASE_GET_XDG_SURFACE 2
#define XDG_SURFACE_GET_TOPLEVEL 1

/* Ids from 0xff000000 are the compositor's (WL_SERVER_ID_START); a client allocates its own from 1,
 * reusing the lowest free ones, so a table indexed by id stays small. Ids past this are not followed. */
#define MAX_TRACKED_ID (1u << 20)

enum kind { NONE, REGISTRY, COMPOSITOR, WM_BASE, SURFACE, XDG_SURFACE };
enum { TOPLEVEL = 1, BUFFER_ATTACHED = 2 };

static struct wl_object *object(struct wl_frames *f, uint32_t id) {
        if (id == 0 || id >= MAX_TRACKED_ID)
                return NULL;
        if (id >= f->nobjects) {
                uint32_t n = f->nobjects ? f->nobjects : 64;
                while (n <= id)
                        n *= 2;
                struct wl_object *grown = realloc(f->objects, n * sizeof *grown);
                if (!grown)
                        return NULL;
                memset(grown + f->nobjects, 0, (n - f->nobjects) * sizeof *grown);
                f->objects = grown;
                f->nobjects = n;
        }
        return &f->objects[id];
}

static enum kind kind_of(struct wl_frames *f, uint32_t id) {
        return id < f->nobjects ? f->objects[id].kind : NONE;
}

static void create(struct wl_frames *f, uint32_t id, enum kind kind) {
        struct wl_object *o = object(f, id);
        if (o)
                *o = (struct wl_object){ .kind = kind };
}

static uint32_t u32_at(const uint8_t *msg, size_t offset) {
        uint32_t v;
        memcpy(&v, msg + offset, sizeof v);
        return v;
}

/* The header's two words, and argument i (counted in words). */
static uint32_t sender(const uint8_t *msg) {
        return u32_at(msg, 0);
}

static uint32_t opcode_of(const uint8_t *msg) {
        return u32_at(msg, 4) & 0xffff;
}

static size_t size_of(const uint8_t *msg) {
        return u32_at(msg, 4) >> 16;
}

static uint32_t word(const uint8_t *msg, size_t i) {
        return u32_at(msg, HEADER + 4 * i);
}

/* wl_registry.bind(name, interface, version, id): the new object's kind from its interface. */
static void bind(struct wl_frames *f, const uint8_t *msg, size_t size) {
        if (size < HEADER + 8)
                return;
        uint32_t len = word(msg, 1);
        size_t padded = ((size_t) len + 3) & ~(size_t) 3;
        if (len == 0 || HEADER + 8 + padded + 8 > size || msg[HEADER + 8 + len - 1] != '\0')
                return;
        const char *interface = (const char *) msg + HEADER + 8;
        uint32_t id = u32_at(msg, HEADER + 8 + padded + 4);
        if (strcmp(interface, "wl_compositor") == 0)
                create(f, id, COMPOSITOR);
        else if (strcmp(interface, "xdg_wm_base") == 0)
                create(f, id, WM_BASE);
}

static void request(struct wl_frames *f, const uint8_t *msg, size_t size) {
        uint32_t id = sender(msg), opcode = opcode_of(msg);
        size_t nargs = (size - HEADER) / 4;
        enum kind kind = id == WL_DISPLAY_ID ? NONE : kind_of(f, id);
        if (id == WL_DISPLAY_ID && opcode == WL_DISPLAY_GET_REGISTRY && nargs >= 1)
                create(f, word(msg, 0), REGISTRY);
        else if (kind == REGISTRY && opcode == WL_REGISTRY_BIND)
                bind(f, msg, size);
        else if (kind == COMPOSITOR && opcode == WL_COMPOSITOR_CREATE_SURFACE && nargs >= 1)
                create(f, word(msg, 0), SURFACE);
        else if (kind == WM_BASE && opcode == XDG_WM_BASE_GET_XDG_SURFACE && nargs >= 2) {
                struct wl_object *o = object(f, word(msg, 0));
                if (o)
                        *o = (struct wl_object){ .kind = XDG_SURFACE, .surface = word(msg, 1) };
        } else if (kind == XDG_SURFACE && opcode == XDG_SURFACE_GET_TOPLEVEL) {
                uint32_t surface = f->objects[id].surface;
                if (kind_of(f, surface) == SURFACE)
                        f->objects[surface].flags |= TOPLEVEL;
        } else if (kind == SURFACE && opcode == WL_SURFACE_ATTACH && nargs >= 1) {
                /* A null buffer (id 0) unmaps the surface at the next commit. */
                if (word(msg, 0) != 0)
                        f->objects[id].flags |= BUFFER_ATTACHED;
                else
                        f->objects[id].flags &= (uint8_t) ~BUFFER_ATTACHED;
        } else if (kind == SURFACE && opcode == WL_SURFACE_COMMIT) {
                if ((f->objects[id].flags & (TOPLEVEL | BUFFER_ATTACHED)) == (TOPLEVEL | BUFFER_ATTACHED))
                        f->shown = true;
                f->objects[id].flags &= (uint8_t) ~BUFFER_ATTACHED; /* the commit took the pending state */
        }
}

/* wl_display.error: object_id (u32), code (u32), message (string). */
static void protocol_error(struct wl_frames *f, const uint8_t *msg, size_t size) {
        if (f->error[0] || size < HEADER + 12)
                return;
        size_t len = word(msg, 2), room = size - HEADER - 12;
        int shown = (int) (len > 0 && len - 1 <= room ? len - 1 : room);
        snprintf(f->error, sizeof f->error, "object %u, code %u: %.*s", word(msg, 0), word(msg, 1), shown,
                 (const char *) msg + HEADER + 12);
}

static void event(struct wl_frames *f, const uint8_t *msg, size_t size) {
        if (sender(msg) == WL_DISPLAY_ID && opcode_of(msg) == WL_DISPLAY_EVENT_ERROR) {
                protocol_error(f, msg, size);
                return;
        }
        /* The id is free again: whatever the client creates with it next is not what it was. */
        if (sender(msg) == WL_DISPLAY_ID && opcode_of(msg) == WL_DISPLAY_EVENT_DELETE_ID &&
            size >= HEADER + 4) {
                uint32_t id = word(msg, 0);
                if (id < f->nobjects)
                        f->objects[id] = (struct wl_object){ 0 };
        }
}

/* Assembles messages from the bytes as they come, whatever the reads cut them into. */
static void feed(struct wl_frames *f, struct wl_flow *flow, const uint8_t *p, size_t n,
                 void (*handle)(struct wl_frames *, const uint8_t *, size_t)) {
        while (n > 0 && !f->lost) {
                size_t size = HEADER;
                if (flow->have >= HEADER) {
                        size = size_of(flow->msg);
                        if (size < HEADER || size % 4 || size > sizeof flow->msg) {
                                f->lost = true;
                                return;
                        }
                }
                size_t take = size - flow->have < n ? size - flow->have : n;
                memcpy(flow->msg + flow->have, p, take);
                flow->have += take;
                p += take;
                n -= take;
                if (flow->have >= HEADER && flow->have == size_of(flow->msg)) {
                        handle(f, flow->msg, flow->have);
                        flow->have = 0;
                }
        }
}

void wl_frames_requests(struct wl_frames *f, const uint8_t *p, size_t n) {
        feed(f, &f->requests, p, n, request);
}

void wl_frames_events(struct wl_frames *f, const uint8_t *p, size_t n) {
        feed(f, &f->events, p, n, event);
}

void wl_frames_free(struct wl_frames *f) {
        free(f->objects);
        *f = (struct wl_frames){ 0 };
}
