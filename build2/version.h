#define TT_VERSION "8422bd4-dirty"
