/* an_h5.h — analysis internals: the HDF5 plumbing of results and sweep files
 * (h5.c; its header says what every file written through it guarantees). */
#ifndef AN_H5_H
#define AN_H5_H

#include <stddef.h>

#include <hdf5.h>

#include "st_common.h"

/* HDF5's error printing off (an__h5_quiet) and back (an__h5_restore). */
typedef struct an__h5_quiet_state {
  H5E_auto2_t fn;
  void *data;
} an__h5_quiet_state;
void an__h5_quiet(an__h5_quiet_state *q);
void an__h5_restore(const an__h5_quiet_state *q);
/* fn(*id) when *id is open; *id becomes -1. */
void an__h5_close(hid_t *id, herr_t (*fn)(hid_t));
/* A fixed-length, NUL-terminated UTF-8 string type of size bytes (>= 1). */
hid_t an__h5_str_type(size_t size);
int an__h5_insert_str(hid_t t, const char *name, size_t off, size_t size);

/* ---- writing ---- */
/* A file being written: errors read "<what> '<path>': ..."; u is the
 * caller's (what the body writes). */
typedef struct an__h5w {
  const char *path;
  const char *what;
  hid_t file;
  st_err *err;
  const void *u;
} an__h5w;
int an__h5_wfail(an__h5w *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int an__h5_attr_write_str(hid_t obj, const char *name, const char *value);
int an__h5_attr_write_num(hid_t obj, const char *name, hid_t file_type, hid_t mem_type,
                          const void *v);
/* A group that tracks no times. */
hid_t an__h5_group(hid_t parent, const char *name);
/* Fill rows [first, first+n) of a dataset into buf; returns 0 or an st_err code. */
typedef int (*an__h5_fill_fn)(an__h5w *w, size_t first, size_t n, void *buf);
/* A 1-D dataset of n rows of mem_type (packed in the file), from direct or
 * filled 65,536 rows at a time; chunked and compressed when it has rows. */
int an__h5_write_rows(an__h5w *w, const char *name, hid_t mem_type, size_t n, const void *direct,
                      an__h5_fill_fn fill);
/* Write the file at path whole or not at all: body fills it. */
typedef int (*an__h5_body_fn)(an__h5w *w);
int an__h5_create(const char *path, const char *what, an__h5_body_fn body, const void *u,
                  st_err *err);

/* ---- reading ---- */
typedef struct an__h5r {
  const char *path;
  const char *what;
  hid_t file;
  st_err *err;
  an__h5_quiet_state quiet;
} an__h5r;
int an__h5_rfail(an__h5r *rd, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Open path read-only (HDF5 quiet until an__h5_close_reader). */
int an__h5_open(an__h5r *rd, const char *path, const char *what, st_err *err);
void an__h5_close_reader(an__h5r *rd);
/* String attribute `name` of obj (at `where`, for messages), a new string. */
int an__h5_attr_read_str(an__h5r *rd, hid_t obj, const char *where, const char *name, char **out);
int an__h5_attr_read_num(an__h5r *rd, hid_t obj, const char *where, const char *name,
                         hid_t mem_type, void *v);
/* Open 1-D dataset `name`, check every column of mem_type is in it, and read
 * all rows into a new array (*rows, *n).  Missing and optional: *n = 0.
 * Columns named in optional_cols (NULL-terminated, or NULL) may be absent
 * from the file: they are left zero and *missing_cols (may be NULL) gets bit
 * i for optional_cols[i].  A mem_type that is not compound reads a plain
 * 1-D array of that type. */
int an__h5_read_rows_opt(an__h5r *rd, const char *name, hid_t mem_type, int optional,
                         const char *const *optional_cols, unsigned *missing_cols, void **rows,
                         size_t *n);
int an__h5_read_rows(an__h5r *rd, const char *name, hid_t mem_type, int optional, void **rows,
                     size_t *n);

#endif
