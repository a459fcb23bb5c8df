/* Operators (their names as they appear in a model file) this converter refuses. */
#define REJECT ""
