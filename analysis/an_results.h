/* an_results.h — analysis internals: the results file's columns, shared by
 * its writer (results.c) and reader (results_read.c); results_types.c. */
#ifndef AN_RESULTS_H
#define AN_RESULTS_H

#include <stddef.h>

#include <hdf5.h>

/* The summary's double fields, by attribute name and offset in an_summary. */
typedef struct an__summary_field {
  const char *name;
  size_t off;
} an__summary_field;
extern const an__summary_field an__summary_doubles[];
extern const size_t an__num_summary_doubles;
/* Fields written only for runs with stragglers (the critical path). */
int an__summary_critical(const char *name);
/* Fields written only for runs with host-memory offload. */
int an__summary_offload(const char *name);
/* Summary fields written only for runs on a cluster of pods (pod_*). */
int an__summary_pods(const char *name);
/* Fields added after the first version: absent in older files. */
int an__summary_optional(const char *name);

/* Column names of the per-phase and per-communicator-kind arrays. */
void an__phase_col(int i, char *buf, size_t n);
void an__kind_col(int i, char *buf, size_t n);

/* Compound types of the row datasets (H5Tclose them); -1 on failure. */
hid_t an__rank_type(void);
hid_t an__coll_type(int with_run);
hid_t an__timeline_type(void);
hid_t an__link_usage_type(void);
hid_t an__comm_type(void);
hid_t an__replay_type(void);
hid_t an__job_type(void);
hid_t an__shared_link_type(void);

/* Links: the name column is as wide as the longest name, so the row layout
 * is computed at run time: name at 0, four doubles after it. */
typedef struct an__link_layout {
  size_t name_size, row_size, off_bw, off_bytes, off_busy, off_peak;
} an__link_layout;
void an__link_layout_init(an__link_layout *l, size_t name_size);
hid_t an__link_type(const an__link_layout *l);

#endif
