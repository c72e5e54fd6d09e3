/* Half of a deliberate call loop (loop_b.c is the other): the layering check must report it. */
int loop_b(int n);
int loop_a(int n);
int loop_a(int n) { return n > 0 ? loop_b(n - 1) : 0; }
