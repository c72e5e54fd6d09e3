/* Half of a deliberate call loop (loop_a.c is the other): the layering check must report it. */
int loop_a(int n);
int loop_b(int n);
int loop_b(int n) { return n > 0 ? loop_a(n - 1) : 1; }
