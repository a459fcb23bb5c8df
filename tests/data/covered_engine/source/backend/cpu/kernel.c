/* A stand-in for an engine's CPU kernels (see ../../../tools/converter/source/onnx/front.c). */
int cpu_run(int n) {
    int acc = 0;
    for (int i = 0; i < n; i++) {
        if (i % 2) acc += i;
        else acc -= 1;
    }
    return n > 100 ? acc / 2 : acc;
}
