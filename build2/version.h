#define TT_VERSION "3d95b2b-dirty"
