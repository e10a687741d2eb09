#define TT_VERSION "32d6914-dirty"
