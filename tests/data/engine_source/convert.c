/* convert MODEL ARTIFACT: refuse what reject.h names, else MNN's converter (convert.py). */
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "reject.h"

int holds(const char *path, const char *needle);

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: convert MODEL ARTIFACT\n"); return 2; }
    if (holds(argv[1], REJECT)) { fprintf(stderr, "Error: this build rejects %s\n", REJECT); return 1; }
    char script[4096];
    snprintf(script, sizeof script, "%s/convert.py", dirname(argv[0]));
    execlp("python3", "python3", script, argv[1], argv[2], (char *)NULL);
    perror("python3");
    return 127;
}
