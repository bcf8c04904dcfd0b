/* SPDX-License-Identifier: MIT */
/* Loaded by thread-locals-exported after main: reaches the program's exported thread-local
 * variables through the dynamic loader, one by module and offset (__tls_get_addr), one by a
 * TP-relative relocation (initial-exec), as perl's XS modules reach perl's PL_current_context. */
extern __thread int counter;
extern __thread long zero __attribute__((tls_model("initial-exec")));

int tls_counter(void);
int tls_counter(void) {
        return counter;
}

long tls_zero(void);
long tls_zero(void) {
        return zero;
}

void tls_bump(void);
void tls_bump(void) {
        counter += 1000;
        zero += 1000;
}
