/* SPDX-License-Identifier: MIT */
/* Adds its own name to libregistry's list from a constructor and prints the list: under exec, only
 * itself. Built twice (registers-a, registers-b), to be served side by side by one daemon. */
void registry_add(const char *name);
void registry_print(void);

__attribute__((constructor)) static void add_myself(void) {
        registry_add(NAME);
}

int main(void) {
        registry_print();
        return 0;
}
