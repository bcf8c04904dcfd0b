/* SPDX-License-Identifier: MIT */
#pragma once

extern int copyvars_counter;
extern const char *copyvars_greeting;
/* Points at itself: its bytes cannot move to a program's copy. */
struct copyvars_self {
        struct copyvars_self *self;
        int value;
};
extern struct copyvars_self copyvars_self;

const char *copyvars_hook(void);
int copyvars_bump(void);
const char *copyvars_call_hook(void);
