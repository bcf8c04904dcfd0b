/* SPDX-License-Identifier: MIT */
/* Small helpers every C part may use: cleanup attributes and array sizes. Never logs. */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
/* A macro's value as a string literal. */
#define STRINGIFY_VALUE(x) #x
#define STRINGIFY(x) STRINGIFY_VALUE(x)

static inline void freep(void *p) {
        free(*(void **) p);
}

/* Closes an fd and keeps errno as it was, so cleanup never hides the error being returned. */
static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}

static inline void fclosep(FILE **f) {
        if (*f) {
                int saved = errno;
                fclose(*f);
                errno = saved;
        }
}

#define _cleanup_free_ __attribute__((cleanup(freep)))
#define _cleanup_fclose_ __attribute__((cleanup(fclosep)))
#define _cleanup_close_ __attribute__((cleanup(closep)))
/* With a function that takes a pointer to the variable and frees what it holds (a *_done). */
#define _cleanup_(f) __attribute__((cleanup(f)))

/* Hands ownership out of a cleanup variable. */
static inline int take_fd(int *fd) {
        int r = *fd;
        *fd = -1;
        return r;
}

static inline void *take_ptr(void *pp) {
        void **p = pp;
        void *r = *p;
        *p = NULL;
        return r;
}

#define TAKE_FD(fd) take_fd(&(fd))
#define TAKE_PTR(p) take_ptr(&(p))
