/* an_int.h — analysis internals: the small SVG writer the plots draw with.
 *
 * An an__svg accumulates one self-contained SVG document in memory (no
 * external fonts, styles or scripts); an__svg_finish closes it and writes it
 * atomically.  Text is escaped; numbers are written with two decimals, so
 * the same plot gives the same bytes.
 */
#ifndef AN_INT_H
#define AN_INT_H

#include <stddef.h>
#include <stdint.h>

#include "st_common.h"

typedef struct an__svg {
  st_buf buf;
  double width, height;
  int oom;               /* an append failed: an__svg_finish reports it */
  const char *text_fill; /* colour of text drawn next, NULL = black */
} an__svg;

void an__svg_begin(an__svg *s, double width, double height, const char *title);
/* title (may be NULL) becomes a tooltip. */
void an__svg_rect(an__svg *s, double x, double y, double w, double h, const char *fill,
                  const char *title);
void an__svg_line(an__svg *s, double x1, double y1, double x2, double y2, const char *stroke,
                  double width);
/* A line through n points (no fill) and a filled circle; title (may be NULL)
 * becomes a tooltip. */
void an__svg_polyline(an__svg *s, const double *x, const double *y, size_t n, const char *stroke,
                      double width, const char *title);
void an__svg_circle(an__svg *s, double cx, double cy, double r, const char *fill,
                    const char *title);
/* anchor: "start", "middle" or "end"; rotate: degrees around (x, y). */
void an__svg_text(an__svg *s, double x, double y, const char *anchor, double size, double rotate,
                  const char *fmt, ...) __attribute__((format(printf, 7, 8)));
/* Open and close a group (for a named part: <g id="...">). */
void an__svg_group(an__svg *s, const char *id);
void an__svg_group_end(an__svg *s);
/* Close the document and write it to path (atomically); releases the buffer. */
int an__svg_finish(an__svg *s, const char *path, st_err *err);
void an__svg_release(an__svg *s);

/* Round numbers for axis ticks: a step of 1, 2 or 5 x 10^k giving about
 * `want` ticks between 0 and max. */
double an__nice_step(double max, int want);

/* A rank list as text, ascending runs of consecutive ranks as ranges:
 * {0,1,2,3,8,12} -> "0-3,8,12".  When it does not fit in n bytes it ends in
 * ",... (K ranks)" (K = count).  Returns buf. */
char *an__format_rank_list(const int32_t *ranks, size_t count, char *buf, size_t n);

/* First row of r->link_usage for link li (the rows are by link), or
 * num_link_usage when the link has none. */
struct an_results;
size_t an__link_first_use(const struct an_results *r, size_t li);

#endif
