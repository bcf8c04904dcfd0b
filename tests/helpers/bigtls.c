/* SPDX-License-Identifier: MIT */
/* A library with a large initial-exec TLS block: exec reserves it at start-up, but a later dlopen
 * finds no room left in the static TLS area. The tests use it to make loading fail before main. */
__thread char bigtls_block[256 * 1024] __attribute__((tls_model("initial-exec")));

int bigtls_touch(int i) {
        bigtls_block[i] = 1;
        return bigtls_block[i];
}
