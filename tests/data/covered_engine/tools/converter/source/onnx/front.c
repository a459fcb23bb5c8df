/* A stand-in for an engine's converter front end, built with -fsanitize-coverage=trace-pc
 * by tests/test_engine_coverage.py: which branch runs depends on the model. */
int front_convert(int size) {
    int kind = size % 5, out = 0;
    if (kind == 0) out = 1;
    else if (kind == 1) out = size / 3;
    else if (kind == 2) { for (int i = 0; i < kind; i++) out += i; }
    else if (kind == 3) out = -size;
    else out = size * 7;
    return out;
}
