/* tests/vgpu/next_b.c: the second definition of next_target() (see next_a.c). */
__attribute__((visibility("default"))) char next_target(void);

char next_target(void)
{
    return 'B';
}
