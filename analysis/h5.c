/* h5.c — the HDF5 plumbing every simtrain file shares (results files, sweep
 * files): a file written whole or not at all, 1-D compound row datasets
 * written in batches, attributes, and reading them back by column name.
 *
 * Invariants (for every file written through an__h5_create):
 *   - The file is written to "<path>.tmp.<pid>" and renamed onto <path> only
 *     after H5Fclose succeeded; on any failure the temporary is removed, so
 *     <path> is either the previous file (or absent) or a complete new one
 *     (st_out_begin: through a symlink to its target, never onto a device,
 *     FIFO or folder, and removed on SIGINT/SIGTERM/SIGHUP).
 *   - No object carries a modification time (H5Pset_obj_track_times off), so
 *     the same calls give the same bytes: a sweep merged from shards can be
 *     compared with an unsharded one byte for byte.
 *   - HDF5's own error stack printing is off while we work; errors come back
 *     as st_err messages "<what> '<path>': ..." naming the dataset.
 *   - HDF5's exit-time cleanup is off (H5dont_atexit, before the library
 *     starts): when H5Fclose fails (disk full) HDF5 keeps the file open with
 *     its cache in a state that its own cleanup then crashes on (segfault at
 *     exit, HDF5 1.10); every file we open is closed by us, so the cleanup
 *     has nothing else to do.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_h5.h"

#define ROWS_PER_WRITE 65536 /* rows converted and written at once */
#define CHUNK_ROWS 16384     /* HDF5 chunk of a row dataset */

/* Runs when the program loads, before any HDF5 call (see the header). */
__attribute__((constructor)) static void h5_no_atexit(void) { H5dont_atexit(); }

void an__h5_quiet(an__h5_quiet_state *q)
{
  H5Eget_auto2(H5E_DEFAULT, &q->fn, &q->data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void an__h5_restore(const an__h5_quiet_state *q) { H5Eset_auto2(H5E_DEFAULT, q->fn, q->data); }

void an__h5_close(hid_t *id, herr_t (*fn)(hid_t))
{
  if (*id >= 0)
    fn(*id);
  *id = -1;
}

hid_t an__h5_str_type(size_t size)
{
  hid_t t = H5Tcopy(H5T_C_S1);
  if (t < 0)
    return -1;
  if (H5Tset_size(t, size ? size : 1) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0 ||
      H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

int an__h5_insert_str(hid_t t, const char *name, size_t off, size_t size)
{
  hid_t s = an__h5_str_type(size);
  if (s < 0)
    return -1;
  herr_t rc = H5Tinsert(t, name, off, s);
  H5Tclose(s);
  return rc < 0 ? -1 : 0;
}

/* ---- writing ---------------------------------------------------------------- */
int an__h5_wfail(an__h5w *w, const char *fmt, ...)
{
  char msg[ST_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return st_err_set(w->err, ST_EIO, "%s '%s': %s", w->what, w->path, msg);
}

int an__h5_attr_write_str(hid_t obj, const char *name, const char *value)
{
  if (!value)
    value = "";
  hid_t t = an__h5_str_type(strlen(value) + 1), sp = H5Screate(H5S_SCALAR), a = -1;
  int rc = -1;
  if (t >= 0 && sp >= 0 && (a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT)) >= 0 &&
      H5Awrite(a, t, value) >= 0)
    rc = 0;
  an__h5_close(&a, H5Aclose);
  an__h5_close(&sp, H5Sclose);
  an__h5_close(&t, H5Tclose);
  return rc;
}

int an__h5_attr_write_num(hid_t obj, const char *name, hid_t file_type, hid_t mem_type,
                          const void *v)
{
  hid_t sp = H5Screate(H5S_SCALAR), a = -1;
  int rc = -1;
  if (sp >= 0 && (a = H5Acreate2(obj, name, file_type, sp, H5P_DEFAULT, H5P_DEFAULT)) >= 0 &&
      H5Awrite(a, mem_type, v) >= 0)
    rc = 0;
  an__h5_close(&a, H5Aclose);
  an__h5_close(&sp, H5Sclose);
  return rc;
}

int an__h5_write_rows(an__h5w *w, const char *name, hid_t mem_type, size_t n, const void *direct,
                      an__h5_fill_fn fill)
{
  hsize_t dims[1] = {n};
  hid_t ftype = H5Tcopy(mem_type), space = -1, dcpl = -1, ds = -1, mspace = -1, fspace = -1;
  void *buf = NULL;
  int rc = ST_OK;
  if (ftype < 0 || (H5Tget_class(ftype) == H5T_COMPOUND && H5Tpack(ftype) < 0) ||
      (space = H5Screate_simple(1, dims, NULL)) < 0 ||
      (dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 || H5Pset_obj_track_times(dcpl, 0) < 0) {
    rc = an__h5_wfail(w, "dataset '/%s': cannot describe the rows", name);
    goto out;
  }
  if (n > 0) {
    hsize_t chunk[1] = {n < CHUNK_ROWS ? n : CHUNK_ROWS};
    if (H5Pset_chunk(dcpl, 1, chunk) < 0 || H5Pset_shuffle(dcpl) < 0 ||
        H5Pset_deflate(dcpl, 4) < 0) {
      rc = an__h5_wfail(w, "dataset '/%s': cannot set up compression", name);
      goto out;
    }
  }
  ds = H5Dcreate2(w->file, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (ds < 0) {
    rc = an__h5_wfail(w, "dataset '/%s': cannot create it", name);
    goto out;
  }
  if (n == 0)
    goto out;
  if (direct) {
    if (H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, direct) < 0)
      rc = an__h5_wfail(w, "dataset '/%s': writing %zu rows failed", name, n);
    goto out;
  }
  size_t per = n < ROWS_PER_WRITE ? n : ROWS_PER_WRITE;
  size_t row = H5Tget_size(mem_type);
  buf = calloc(per, row);
  if (!buf) {
    rc = st_err_set(w->err, ST_ENOMEM, "%s '%s': dataset '/%s': out of memory", w->what,
                    w->path, name);
    goto out;
  }
  for (size_t first = 0; first < n; first += per) {
    size_t cnt = n - first < per ? n - first : per;
    memset(buf, 0, per * row);
    if ((rc = fill(w, first, cnt, buf)) != ST_OK)
      goto out;
    hsize_t start[1] = {first}, count[1] = {cnt};
    an__h5_close(&mspace, H5Sclose);
    an__h5_close(&fspace, H5Sclose);
    if ((mspace = H5Screate_simple(1, count, NULL)) < 0 || (fspace = H5Dget_space(ds)) < 0 ||
        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
        H5Dwrite(ds, mem_type, mspace, fspace, H5P_DEFAULT, buf) < 0) {
      rc = an__h5_wfail(w, "dataset '/%s': writing rows %zu..%zu failed", name, first,
                        first + cnt - 1);
      goto out;
    }
  }
out:
  free(buf);
  an__h5_close(&mspace, H5Sclose);
  an__h5_close(&fspace, H5Sclose);
  an__h5_close(&ds, H5Dclose);
  an__h5_close(&dcpl, H5Pclose);
  an__h5_close(&space, H5Sclose);
  an__h5_close(&ftype, H5Tclose);
  return rc;
}

hid_t an__h5_group(hid_t parent, const char *name)
{
  hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE), g = -1;
  if (gcpl >= 0 && H5Pset_obj_track_times(gcpl, 0) >= 0)
    g = H5Gcreate2(parent, name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
  an__h5_close(&gcpl, H5Pclose);
  return g;
}

int an__h5_create(const char *path, const char *what, an__h5_body_fn body, const void *u,
                  st_err *err)
{
  st_outfile o;
  int orc = st_out_begin(&o, path, err);
  if (orc)
    return orc;
  const char *tmp = o.tmp;
  /* Create it with stdio first: HDF5 does not say why a create failed. */
  FILE *probe = fopen(tmp, "wb");
  if (!probe) {
    int e = errno;
    st_out_commit(&o, 0, path, NULL);
    return st_err_set(err, ST_EIO, "%s '%s': cannot create '%s': %s", what, path, tmp,
                      strerror(e));
  }
  fclose(probe);

  an__h5_quiet_state q;
  an__h5_quiet(&q);
  an__h5w w = {path, what, -1, err, u};
  int rc = ST_OK;
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fcpl = H5Pcreate(H5P_FILE_CREATE);
  /* 1.8 format or later: attributes larger than 64 KiB (big JSON) go to dense
   * storage.  The root group tracks no times (the header). */
  if (fapl < 0 || fcpl < 0 || H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST) < 0 ||
      H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0 || H5Pset_obj_track_times(fcpl, 0) < 0)
    rc = an__h5_wfail(&w, "cannot set up the HDF5 file access");
  if (rc == ST_OK && (w.file = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl, fapl)) < 0)
    rc = an__h5_wfail(&w, "cannot create '%s' as an HDF5 file", tmp);
  if (rc == ST_OK)
    rc = body(&w);
  if (w.file >= 0 && H5Fclose(w.file) < 0 && rc == ST_OK)
    rc = an__h5_wfail(&w, "closing '%s' failed (disk full?)", tmp);
  an__h5_close(&fapl, H5Pclose);
  an__h5_close(&fcpl, H5Pclose);
  an__h5_restore(&q);
  if (rc != ST_OK) {
    st_out_commit(&o, 0, path, NULL);
    return rc;
  }
  return st_out_commit(&o, 1, path, err);
}

/* ---- reading ------------------------------------------------------------------- */
int an__h5_rfail(an__h5r *rd, int code, const char *fmt, ...)
{
  char msg[ST_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return st_err_set(rd->err, code, "%s '%s': %s", rd->what, rd->path, msg);
}

int an__h5_open(an__h5r *rd, const char *path, const char *what, st_err *err)
{
  rd->path = path;
  rd->what = what;
  rd->file = -1;
  rd->err = err;
  FILE *probe = fopen(path, "rb");
  if (!probe)
    return st_err_set(err, ST_EIO, "%s '%s': cannot open: %s", what, path, strerror(errno));
  fclose(probe);
  an__h5_quiet(&rd->quiet);
  if (H5Fis_hdf5(path) <= 0) {
    an__h5_restore(&rd->quiet);
    return st_err_set(err, ST_EINPUT, "%s '%s': not an HDF5 file", what, path);
  }
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl >= 0)
    H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
  rd->file = H5Fopen(path, H5F_ACC_RDONLY, fapl >= 0 ? fapl : H5P_DEFAULT);
  an__h5_close(&fapl, H5Pclose);
  if (rd->file < 0) {
    an__h5_restore(&rd->quiet);
    return st_err_set(err, ST_EINPUT, "%s '%s': cannot open it as an HDF5 file", what, path);
  }
  return ST_OK;
}

void an__h5_close_reader(an__h5r *rd)
{
  if (rd->file >= 0) {
    an__h5_close(&rd->file, H5Fclose);
    an__h5_restore(&rd->quiet);
  }
}

int an__h5_attr_read_str(an__h5r *rd, hid_t obj, const char *where, const char *name, char **out)
{
  if (H5Aexists(obj, name) <= 0)
    return an__h5_rfail(rd, ST_EINPUT, "%s: attribute '%s' is missing", where, name);
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT), ft = -1, mt = -1;
  int rc = ST_OK;
  char *s = NULL;
  if (a < 0 || (ft = H5Aget_type(a)) < 0 || H5Tget_class(ft) != H5T_STRING) {
    rc = an__h5_rfail(rd, ST_EINPUT, "%s: attribute '%s' is not a string", where, name);
    goto out;
  }
  if (H5Tis_variable_str(ft) > 0) {
    char *v = NULL;
    mt = H5Tcopy(H5T_C_S1);
    if (mt < 0 || H5Tset_size(mt, H5T_VARIABLE) < 0 || H5Aread(a, mt, &v) < 0) {
      rc = an__h5_rfail(rd, ST_EINPUT, "%s: attribute '%s' cannot be read", where, name);
      goto out;
    }
    s = strdup(v ? v : "");
    H5free_memory(v);
  } else {
    size_t n = H5Tget_size(ft);
    s = calloc(n + 1, 1);
    if (s && ((mt = an__h5_str_type(n)) < 0 || H5Aread(a, mt, s) < 0)) {
      free(s);
      s = NULL;
      rc = an__h5_rfail(rd, ST_EINPUT, "%s: attribute '%s' cannot be read", where, name);
      goto out;
    }
  }
  if (!s)
    rc = an__h5_rfail(rd, ST_ENOMEM, "%s: out of memory reading attribute '%s'", where, name);
out:
  an__h5_close(&mt, H5Tclose);
  an__h5_close(&ft, H5Tclose);
  an__h5_close(&a, H5Aclose);
  if (rc == ST_OK)
    *out = s;
  return rc;
}

int an__h5_attr_read_num(an__h5r *rd, hid_t obj, const char *where, const char *name,
                         hid_t mem_type, void *v)
{
  if (H5Aexists(obj, name) <= 0)
    return an__h5_rfail(rd, ST_EINPUT, "%s: attribute '%s' is missing", where, name);
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT), sp = -1, ft = -1;
  int rc = ST_OK;
  if (a < 0 || (sp = H5Aget_space(a)) < 0 || H5Sget_simple_extent_npoints(sp) != 1 ||
      (ft = H5Aget_type(a)) < 0 ||
      (H5Tget_class(ft) != H5T_INTEGER && H5Tget_class(ft) != H5T_FLOAT) ||
      H5Aread(a, mem_type, v) < 0)
    rc = an__h5_rfail(rd, ST_EINPUT, "%s: attribute '%s' is not a number", where, name);
  an__h5_close(&ft, H5Tclose);
  an__h5_close(&sp, H5Sclose);
  an__h5_close(&a, H5Aclose);
  return rc;
}

static int is_optional(const char *col, const char *const *optional_cols)
{
  for (size_t i = 0; optional_cols && optional_cols[i]; i++)
    if (!strcmp(col, optional_cols[i]))
      return 1;
  return 0;
}

/* Every stored chunk of a filtered dataset went through all its filters (a
 * filter mask of 0), as the writer stores them: a damaged mask makes HDF5
 * 1.10 take a compressed chunk for raw rows and read past its buffer (found
 * by fuzzing, tests/data/fuzz/hdf5/), so the mask is checked before reading.
 * Each chunk is looked up by its coordinate (the index's own search). */
static int chunks_check(an__h5r *rd, const char *name, hid_t ds, hsize_t rows)
{
  hid_t pl = H5Dget_create_plist(ds);
  if (pl < 0)
    return an__h5_rfail(rd, ST_EINPUT, "dataset '/%s': its storage cannot be read (damaged file?)",
                        name);
  hsize_t chunk[1] = {0};
  int rc = ST_OK;
  if (H5Pget_layout(pl) == H5D_CHUNKED && H5Pget_nfilters(pl) > 0) {
    if (H5Pget_chunk(pl, 1, chunk) != 1 || chunk[0] == 0)
      rc = an__h5_rfail(rd, ST_EINPUT, "dataset '/%s': its chunks are not rows (damaged file?)",
                        name);
    for (hsize_t off = 0; !rc && off < rows; off += chunk[0]) {
      unsigned mask = 0;
      haddr_t addr = HADDR_UNDEF;
      hsize_t size = 0, at[1] = {off};
      if (H5Dget_chunk_info_by_coord(ds, at, &mask, &addr, &size) < 0)
        rc = an__h5_rfail(rd, ST_EINPUT, "dataset '/%s': the chunk of rows %llu.. cannot be "
                          "found (damaged file?)", name, (unsigned long long)off);
      else if (addr != HADDR_UNDEF && mask != 0)
        rc = an__h5_rfail(rd, ST_EINPUT, "dataset '/%s': the chunk of rows %llu.. says filters "
                          "were skipped (mask %#x), which the writer never does (damaged file?)",
                          name, (unsigned long long)off, mask);
    }
  }
  H5Pclose(pl);
  return rc;
}

int an__h5_read_rows_opt(an__h5r *rd, const char *name, hid_t mem_type, int optional,
                         const char *const *optional_cols, unsigned *missing_cols, void **rows,
                         size_t *n)
{
  *rows = NULL;
  *n = 0;
  if (missing_cols)
    *missing_cols = 0;
  if (H5Lexists(rd->file, name, H5P_DEFAULT) <= 0)
    return optional ? ST_OK : an__h5_rfail(rd, ST_EINPUT, "dataset '/%s' is missing", name);
  hid_t ds = H5Dopen2(rd->file, name, H5P_DEFAULT), ft = -1, sp = -1, sub = -1;
  int rc = ST_OK;
  void *buf = NULL;
  int compound = H5Tget_class(mem_type) == H5T_COMPOUND;
  if (ds < 0 || (ft = H5Dget_type(ds)) < 0 ||
      (compound && H5Tget_class(ft) != H5T_COMPOUND)) {
    rc = an__h5_rfail(rd, ST_EINPUT, "'/%s' is not a table of rows (compound dataset)", name);
    goto out;
  }
  if (!compound && H5Tget_class(ft) != H5Tget_class(mem_type)) {
    rc = an__h5_rfail(rd, ST_EINPUT, "'/%s' is not an array of numbers of the expected kind",
                      name);
    goto out;
  }
  int nm = compound ? H5Tget_nmembers(mem_type) : 0;
  for (int i = 0; i < nm; i++) {
    char *col = H5Tget_member_name(mem_type, (unsigned)i);
    int have = col ? H5Tget_member_index(ft, col) >= 0 : 0;
    if (!have && col && is_optional(col, optional_cols)) {
      for (size_t k = 0; optional_cols[k]; k++)
        if (!strcmp(col, optional_cols[k]) && missing_cols)
          *missing_cols |= 1u << k;
      if (sub < 0)
        sub = H5Tcreate(H5T_COMPOUND, H5Tget_size(mem_type));
      H5free_memory(col);
      continue;
    }
    if (!have) {
      rc = an__h5_rfail(rd, ST_EINPUT, "dataset '/%s': column '%s' is missing", name,
                        col ? col : "?");
      H5free_memory(col);
      goto out;
    }
    H5free_memory(col);
  }
  if (sub >= 0) { /* read only the columns the file has */
    for (int i = 0; i < nm; i++) {
      char *col = H5Tget_member_name(mem_type, (unsigned)i);
      hid_t mt = H5Tget_member_type(mem_type, (unsigned)i);
      int bad = !col || mt < 0;
      if (!bad && H5Tget_member_index(ft, col) >= 0)
        bad = H5Tinsert(sub, col, H5Tget_member_offset(mem_type, (unsigned)i), mt) < 0;
      if (mt >= 0)
        H5Tclose(mt);
      H5free_memory(col);
      if (bad) {
        rc = an__h5_rfail(rd, ST_ENOMEM, "dataset '/%s': cannot describe the rows", name);
        goto out;
      }
    }
    mem_type = sub;
  }
  hsize_t dims[1];
  if ((sp = H5Dget_space(ds)) < 0 || H5Sget_simple_extent_ndims(sp) != 1 ||
      H5Sget_simple_extent_dims(sp, dims, NULL) < 0) {
    rc = an__h5_rfail(rd, ST_EINPUT, "dataset '/%s' is not one-dimensional", name);
    goto out;
  }
  size_t row = H5Tget_size(mem_type);
  buf = calloc(dims[0] ? dims[0] : 1, row);
  if (!buf) {
    rc = an__h5_rfail(rd, ST_ENOMEM, "dataset '/%s': out of memory for %llu rows", name,
                      (unsigned long long)dims[0]);
    goto out;
  }
  if (dims[0] > 0 && (rc = chunks_check(rd, name, ds, dims[0])))
    goto out;
  if (dims[0] > 0 && H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
    rc = an__h5_rfail(rd, ST_EINPUT, "dataset '/%s': reading %llu rows failed (damaged file?)",
                      name, (unsigned long long)dims[0]);
    goto out;
  }
  *rows = buf;
  *n = dims[0];
  buf = NULL;
out:
  free(buf);
  an__h5_close(&sub, H5Tclose);
  an__h5_close(&sp, H5Sclose);
  an__h5_close(&ft, H5Tclose);
  an__h5_close(&ds, H5Dclose);
  return rc;
}

int an__h5_read_rows(an__h5r *rd, const char *name, hid_t mem_type, int optional, void **rows,
                     size_t *n)
{
  return an__h5_read_rows_opt(rd, name, mem_type, optional, NULL, NULL, rows, n);
}
