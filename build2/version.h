#define TT_VERSION "ed9f953-dirty"
