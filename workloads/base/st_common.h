/* st_common.h — project-wide basics every stage shares: error values with
 * context (one table of codes), checked numbers, a bump arena, a growable
 * string buffer, strings and sizes (st_common.c); whole-file reading that
 * understands gzip, atomic output files, paths and folder listings
 * (st_file.c); the one JSON string writer and the checked JSON reader
 * (st_json.c).
 *
 * Why workloads/base/: the workload library is the bottom of the dependency
 * graph (every other stage reads or writes workloads), so the helpers all
 * stages need are compiled into it; their folder keeps them apart from the
 * workload code.  The `st_` prefix is the one exception to "prefix = folder".
 *
 * Errors are values.  A function that can fail returns 0 or a negative ST_E*
 * code and fills the caller's st_err with one line that says what failed
 * first, quotes the subject and points at the place:
 *     trace 'rank3.json.gz': event 4031: 'dur' is negative
 * On error the function leaves its outputs untouched (or freed).  Only main()
 * prints ("simtrain: error: " + message) and exits.
 */
#ifndef ST_COMMON_H
#define ST_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: one table gives each its name ST_<name>, its text
 * (st_strerror) and the exit status main() ends with (st_err_exit_status),
 * as libuv's UV_ERRNO_MAP.  The codes are 0, -1, -2, ... in table order. */
#define ST_ERR_MAP(XX)                                                                      \
  XX(OK, "success", 0)                                                                      \
  XX(EUSAGE, "usage error", 1)      /* bad command line */                                  \
  XX(EINPUT, "bad input", 2)        /* bad input file or spec */                            \
  XX(EIO, "input/output error", 2)  /* a file could not be read or written */               \
  XX(ENOMEM, "out of memory", 2)                                                            \
  XX(ESIM, "simulation failure", 3) /* deadlock, engine failure */

enum st__err_index {
#define ST__ERR_INDEX(name, text, status) ST__ERR_INDEX_##name,
  ST_ERR_MAP(ST__ERR_INDEX)
#undef ST__ERR_INDEX
};

enum {
#define ST__ERR_CODE(name, text, status) ST_##name = -ST__ERR_INDEX_##name,
  ST_ERR_MAP(ST__ERR_CODE)
#undef ST__ERR_CODE
};

#define ST_ERR_MSG_MAX 1024

typedef struct st_err {
  int code;                  /* one of ST_E*, ST_OK when no error */
  char msg[ST_ERR_MSG_MAX];  /* one line, no trailing newline, no "simtrain: error:" */
} st_err;

/* Fill err (may be NULL) and return code, so callers write
 *   return st_err_set(err, ST_EINPUT, "spec '%s': key '%s' is unknown", f, k); */
int st_err_set(st_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefix an existing message with more context: "file 'x': " + old message. */
int st_err_prefix(st_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void st_err_clear(st_err *err);
/* The table's text for a code; "unknown error" for a code not in it. */
const char *st_strerror(int code);
/* The table's exit status for a code (0 ok, 1 usage, 2 input/io/memory,
 * 3 simulation); 2 for a code not in it. */
int st_err_exit_status(int code);

/* ---- checked numbers ------------------------------------------------------ */
/* Every size, count and rate read from an input passes through st_num_check
 * before it is stored, so nothing downstream sees inf, nan, a negative size
 * or a value its integer type would wrap.  The documented limits: */
#define ST_BYTES_MAX 9007199254740992.0 /* 2^53: every byte count up to it is exact in a double */
/* Ranks (GPUs) of a workload, a cluster or an imported trace, and a model's
 * layers: checked before anything is allocated for them, so that a few
 * bytes of input cannot ask for gigabytes (docs/workload-format.md). */
#define ST_RANKS_MAX 1048576 /* 2^20 */
#define ST_LAYERS_MAX 65536  /* 2^16 */
#define ST_INT32_MAX 2147483647.0
#define ST_INT32_MIN (-2147483648.0)
/* kind: ST_NUM_REAL or ST_NUM_INTEGER, either | ST_NUM_OPEN_LO (lo itself
 * is out of range: lo < v, for rates that must be positive). */
enum { ST_NUM_REAL = 0, ST_NUM_INTEGER = 1, ST_NUM_OPEN_LO = 2 };
/* 0 if v is finite, lo <= v <= hi and (kind ST_NUM_INTEGER) a whole number;
 * else ST_EINPUT with err saying, after the subject that fmt names (file,
 * place and key: "cluster 'c.json': 'nic_GBps'"), one of
 *   <subject> is not a finite number
 *   <subject> is 1e+19, above the largest allowed 9007199254740992
 *   <subject> is -1, below the smallest allowed 0
 *   <subject> is 0; it must be greater than 0          (ST_NUM_OPEN_LO)
 *   <subject> is 2.5, not a whole number */
int st_num_check(double v, int kind, double lo, double hi, st_err *err, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Numbers in text (trace lines, command-line values): the whole of text is
 * one number ("<subject> is 'x1', not a number" otherwise), then
 * st_num_check's rules and messages.  *out is written only on success. */
int st_num_parse(const char *text, int kind, double lo, double hi, double *out, st_err *err,
                 const char *fmt, ...) __attribute__((format(printf, 7, 8)));
/* A whole number lo..hi in text, into a long. */
int st_num_parse_long(const char *text, long lo, long hi, long *out, st_err *err,
                      const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* A double that must be a whole number lo..hi, into a long: the one checked
 * way from a double read from input to an integer field (a cast of a value
 * out of the type's range is undefined behaviour). */
int st_num_to_long(double v, long lo, long hi, long *out, st_err *err, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* ---- random numbers (st_rng.c) -------------------------------------------
 * xoshiro256** (Blackman and Vigna), its state seeded by splitmix64 from a
 * seed and a stream number (a trial, a (rank, iteration)): integers only,
 * the same on every platform.  The caller owns the state (no globals). */
typedef struct st_rng {
  uint64_t s[4];
} st_rng;
void st_rng_seed(st_rng *r, uint64_t seed, uint64_t stream);
uint64_t st_rng_next(st_rng *r);
/* Uniform in (0, 1]: the top 53 bits, plus one, over 2^53. */
double st_rng_uniform(st_rng *r);
/* log(x) for x in (0, 1] from IEEE +, *, / alone (no C library). */
double st_rng_log(double x);
/* Exponential with this rate (per s); rate 0: infinity. */
double st_rng_exp(st_rng *r, double rate);
/* Standard normal (Marsaglia's polar method, one value per pair drawn). */
double st_rng_normal(st_rng *r);
/* Lognormal with mean 1: exp(sigma Z - sigma^2 / 2), Z standard normal, so
 * log X ~ N(-sigma^2/2, sigma^2), E[X] = 1, Var[X] = exp(sigma^2) - 1.
 * sigma <= 0: exactly 1. */
double st_rng_lognormal1(st_rng *r, double sigma);

/* ---- arena: many small same-lifetime allocations freed at once ---------- */
typedef struct st_arena_block st_arena_block;
typedef struct st_arena {
  st_arena_block *head;
  size_t block_bytes; /* default size of a new block */
  size_t used_bytes;  /* total handed out, for accounting */
} st_arena;

void st_arena_init(st_arena *a, size_t block_bytes);
void st_arena_release(st_arena *a);
/* 16-byte aligned, zeroed; NULL only when out of memory. */
void *st_arena_alloc(st_arena *a, size_t bytes);
char *st_arena_strdup(st_arena *a, const char *s);

/* ---- growable string buffer -------------------------------------------- */
typedef struct st_buf {
  char *data; /* always NUL-terminated when non-NULL */
  size_t len, cap;
} st_buf;

void st_buf_init(st_buf *b);
void st_buf_release(st_buf *b);
/* Empty the buffer and keep its memory, for reuse. */
void st_buf_reset(st_buf *b);
int st_buf_append(st_buf *b, const void *data, size_t len);
int st_buf_printf(st_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hand the buffer to the caller (who frees it with free()); b is reset. */
char *st_buf_detach(st_buf *b, size_t *len);

/* ---- strings -------------------------------------------------------------- */
/* 1 if s ends with suffix. */
int st_str_ends_with(const char *s, const char *suffix);
/* A copy of s on the heap (NULL for NULL, or when out of memory); caller frees. */
char *st_strdup(const char *s);
/* Free count strings and the array holding them (NULL is fine). */
void st_str_list_free(char **v, size_t count);
/* Line and column (both from 1) of byte offset off in text of len bytes, for
 * messages that point into a file ("line 3, column 14"). */
void st_text_line_col(const char *text, size_t len, size_t off, long *line, long *col);
/* Parse a size like "4G", "64MiB", "1M", "512", "1.5K" into bytes (K=1024).
 * Returns 0 on success. */
int st_parse_bytes(const char *s, double *bytes);
/* Format bytes with binary units into buf ("64 MiB"). */
const char *st_format_bytes(double bytes, char *buf, size_t n);

/* A splitmix64 stream for seeded randomness. */
uint64_t st_splitmix64(uint64_t *state);

/* ---- files -------------------------------------------------------------- */
/* Read a whole file, inflating it if it is gzip-compressed (detected by the
 * magic bytes, not the name).  *data is NUL-terminated; caller frees. */
int st_file_read_all(const char *path, char **data, size_t *len, st_err *err);
/* Write data to path atomically (st_out_begin/commit below).  gzip != 0
 * compresses. */
int st_file_write_atomic(const char *path, const void *data, size_t len, int gzip, st_err *err);

/* ---- output files: one rule for every writer (-o of every command) ------
 * st_out_begin() resolves a symlink to its final target (the temporary goes
 * beside the target and the rename replaces the target; the link stays a
 * link), refuses an existing target that is not a regular file (device,
 * FIFO, directory, socket: "cannot write 'p': it is a FIFO, not a regular
 * file"), names the temporary "<target>.tmp.<pid>" and registers it so that
 * SIGINT, SIGTERM and SIGHUP remove it.  The writer creates o.tmp itself,
 * then calls st_out_commit(ok) which renames it onto the target (ok != 0) or
 * removes it, and unregisters it. */
typedef struct st_outfile {
  char target[4096];
  char tmp[4200];
  int slot; /* in the signal handler's table, -1 if none */
} st_outfile;
int st_out_begin(st_outfile *o, const char *path, st_err *err);
/* ok == 0: remove the temporary and return ST_OK; else rename it, ST_EIO on failure. */
int st_out_commit(st_outfile *o, int ok, const char *path, st_err *err);
/* Handlers for SIGINT, SIGTERM and SIGHUP that remove the registered
 * temporary files; SIGINT then exits 130 with "simtrain: error: interrupted
 * (SIGINT); temporary files removed", the others end the process by their
 * signal.  main() installs them; again after anything that installs its own
 * (SimGrid's engine catches SIGINT when it starts). */
void st_signals_install(void);

/* ---- the memory guard (st_mem.c) -----------------------------------------
 * A limit on the process's resident memory: past it the process removes its
 * temporary output files, prints "simtrain: error: out of memory: resident
 * memory passed --max-memory 4.00 GiB" and exits 2.  main() starts it
 * (limit_bytes <= 0: st_mem_default_limit()); a forked child restarts it.
 * Each process has its own limit (the children of a sweep or a search each
 * have the whole of it). */
int st_mem_guard_start(double limit_bytes, st_err *err);
void st_mem_guard_restart(void);
/* The guard's limit in bytes, 0 when there is none. */
double st_mem_guard_limit(void);
/* 90% of the physical memory, or of the cgroup's memory.max when smaller; 0
 * when neither is known. */
double st_mem_default_limit(void);

/* ---- paths and folders --------------------------------------------------- */
/* The last component of a path ("runs/a.h5" -> "a.h5"), a pointer into path. */
const char *st_path_basename(const char *path);
/* The folder part of a path: "runs/a.h5" -> "runs", "a.h5" -> ".", "/a.h5" ->
 * "/"; caller frees; NULL when out of memory. */
char *st_path_dirname(const char *path);
/* 1 if path names a regular file (symlinks followed), else 0. */
int st_path_is_file(const char *path);
/* The regular files of folder dir whose names pass keep() (NULL: all; names
 * starting with '.' never), as "dir/name" strings sorted by strcmp; free them
 * with st_str_list_free.  On error nothing is returned and err says
 * "cannot open folder 'dir': why" (ST_EIO) or "out of memory". */
int st_dir_list(const char *dir, int (*keep)(const char *name), char ***names, size_t *count,
                st_err *err);

/* ---- writing JSON ------------------------------------------------------- */
/* s as a JSON string, quoted and escaped: \" \\ \n \t, other control
 * characters as \u00XX, everything else (UTF-8 included) as it is; NULL
 * prints as "".  The one JSON string writer: every JSON the project writes
 * (workload files, --json output, results-file JSON, exports) uses it. */
void st_json_str(FILE *out, const char *s);
/* The same, appended to b; 0 or ST_ENOMEM. */
int st_buf_json_str(st_buf *b, const char *s);
/* v as a JSON number ("%.17g") in buf, or "null" when v is NaN or infinite
 * (JSON has neither); returns buf. */
const char *st_json_num(double v, char *buf, size_t n);

/* ---- reading JSON: every value checked where it is read -----------------
 * One reader for workload files, cluster specs and model specs.  A reader
 * names its subject once ("workload 'w.json'", "spec 'c.json'"); each check
 * is given the place of the object it reads in as a chain of st_jpath frames
 * on the C stack, rendered only when an error is reported, so the happy path
 * pays nothing for it.  Messages read
 *     <subject>: <path>: <what is wrong>
 *     workload 'w.json': programs[3].ops[7]: key 'byts' is unknown
 *     spec 'c.json': node.intra: 'link_GBps' is a string, expected a number
 *     model 'm.json': key 'vocab' is missing            (at the top: no path)
 * where a value is named by its key, or by nothing when it is an array
 * element (the path ends in its index).  Each check returns 0 or ST_EINPUT
 * (ST_ENOMEM for st_jrd_oom) and writes nothing on error. */
struct cJSON;

typedef struct st_jpath {
  const struct st_jpath *up; /* the enclosing place, NULL at the top */
  const char *key;           /* ".key" when non-NULL, else "[idx]" */
  long idx;
} st_jpath;

typedef struct st_jrd {
  const char *subject; /* "workload 'w.json'" */
  const char *doc;     /* named after an unknown key ("see docs/platforms.md"), or NULL */
  st_err *err;         /* may be NULL */
} st_jrd;

/* Parse text (len bytes) as one JSON document; *root is the caller's to
 * cJSON_Delete.  Errors name the subject and the place:
 *     <subject>: the file is empty
 *     <subject>: JSON syntax error near line 3, column 14
 *     <subject>: unexpected text after the JSON document at line 9, column 2 */
int st_json_parse(const char *text, size_t len, const char *subject, struct cJSON **root,
                  st_err *err);
/* "a number", "a string", "an array", "an object", "null", "true", "false". */
const char *st_json_type_name(const struct cJSON *v);

/* ST_EINPUT with "<subject>: <path>: " + the message. */
int st_jrd_fail(const st_jrd *r, const st_jpath *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* ST_ENOMEM with "<subject>: out of memory". */
int st_jrd_oom(const st_jrd *r);
/* "key 'k' is missing" at the object's path. */
int st_jrd_missing(const st_jrd *r, const st_jpath *at, const char *key);
/* The object at `at` has only keys from keys[0..n-1] (n < 0: keys ends with
 * NULL), each at most once: "key 'k' is unknown", "key 'k' appears twice",
 * "is an array, expected an object" ("the document is ..." at the top).
 * slots (n entries, may be NULL) receive each key's member or NULL. */
int st_jrd_members(const st_jrd *r, const st_jpath *at, const struct cJSON *obj,
                   const char *const *keys, int n, const struct cJSON **slots);
/* Member v of the object at `at`, of the type asked for: */
int st_jrd_string(const st_jrd *r, const st_jpath *at, const struct cJSON *v, const char **out);
int st_jrd_bool(const st_jrd *r, const st_jpath *at, const struct cJSON *v, int *out);
/* A finite number >= 0 ("'k' is negative"). */
int st_jrd_size(const st_jrd *r, const st_jpath *at, const struct cJSON *v, double *out);
/* A byte count: st_jrd_size, and at most ST_BYTES_MAX. */
int st_jrd_bytes(const st_jrd *r, const st_jpath *at, const struct cJSON *v, double *out);
/* A whole number in lo..hi ("'k' is 2.5, expected an integer", "'k' is 0,
 * outside 1..255"). */
int st_jrd_int(const st_jrd *r, const st_jpath *at, const struct cJSON *v, long lo, long hi,
               long *out);
/* A number checked by st_num_check (kind, lo, hi), for rates and limits:
 * "'k' is 1e+308, above the largest allowed 1000000". */
int st_jrd_number(const st_jrd *r, const st_jpath *at, const struct cJSON *v, int kind, double lo,
                  double hi, double *out);
/* An array element that must be a whole number in lo..hi, named by noun:
 * "rank 99 is outside 0..1", "rank is a string, expected an integer". */
int st_jrd_elem_int(const st_jrd *r, const st_jpath *at, const struct cJSON *v, const char *noun,
                    long lo, long hi, long *out);
/* A name from a table of count names: from_name(s) (NULL: the exact names
 * name_of(0..count-1)) gives its index; "'k' is 'ring', expected one of
 * switch, fat-tree, ...". */
int st_jrd_enum(const st_jrd *r, const st_jpath *at, const struct cJSON *v,
                int (*from_name)(const char *), const char *(*name_of)(int), int count, int *out);

#ifdef __cplusplus
}
#endif
#endif /* ST_COMMON_H */
