/* fuzz_common.h — what every libFuzzer entry point (tests/fuzz/fuzz_*.c)
 * shares: the rule an error must keep, and the input written to a file for
 * the readers that take a path.
 *
 * The rule: any input either reads, or fails with a message and an error
 * code from ST_ERR_MAP; never a crash, a leak, an out-of-bounds access or
 * undefined behaviour (the targets are built with ASan and UBSan, which stop
 * at the first report).  fuzz_check() aborts, so libFuzzer keeps the input,
 * when a failure says nothing or an error left something behind.
 */
#ifndef ST_FUZZ_COMMON_H
#define ST_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "st_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* rc from a reader: ST_OK, or an error with a message (FUZZ_VERBOSE=1 prints
 * it). */
static inline void fuzz_check(int rc, const st_err *err)
{
  if (getenv("FUZZ_VERBOSE")) /* triage: what the reader said */
    fprintf(stderr, "fuzz: rc %d: %s\n", rc, rc ? err->msg : "ok");
  if (rc == ST_OK)
    return;
  if (rc > 0 || rc < ST_ESIM || err->code != rc || err->msg[0] == '\0' ||
      strchr(err->msg, '\n')) {
    /* an error is one line with a code from the table */
    fprintf(stderr, "fuzz: rc %d, err.code %d, message '%s'\n", rc, err->code, err->msg);
    abort();
  }
}

/* A scratch folder of this process (under TMPDIR, removed at exit), and
 * path = folder/name. */
static char fuzz_dir[512];
static void fuzz_cleanup(void)
{
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", fuzz_dir);
  if (system(cmd)) {
  }
}
static inline const char *fuzz_path(const char *name)
{
  static char path[700];
  if (!fuzz_dir[0]) {
    const char *t = getenv("TMPDIR");
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/simtrain-fuzz.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(fuzz_dir))
      abort();
    atexit(fuzz_cleanup);
  }
  snprintf(path, sizeof path, "%s/%s", fuzz_dir, name);
  return path;
}

/* Write the input to folder/name; returns the path. */
static inline const char *fuzz_write(const char *name, const uint8_t *data, size_t size)
{
  const char *path = fuzz_path(name);
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
    abort();
  return path;
}

/* The input as a NUL-terminated string (caller frees). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
  char *s = malloc(size + 1);
  if (!s)
    abort();
  memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

#endif
