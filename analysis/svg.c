/* svg.c — a small SVG writer: rectangles, lines, polylines, circles, text and
 * groups into one self-contained document (see an_int.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "an_int.h"

static void add(an__svg *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(an__svg *s, const char *fmt, ...)
{
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0 || st_buf_append(&s->buf, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1))
    s->oom = 1;
}

static void add_escaped(an__svg *s, const char *t)
{
  for (const char *p = t; *p; p++) {
    const char *e = NULL;
    switch (*p) {
    case '&': e = "&amp;"; break;
    case '<': e = "&lt;"; break;
    case '>': e = "&gt;"; break;
    case '"': e = "&quot;"; break;
    case '\'': e = "&apos;"; break;
    default: break;
    }
    if ((unsigned char)*p < 0x20 && *p != '\t' && *p != '\n')
      e = " "; /* not allowed in XML 1.0 */
    if (e ? st_buf_append(&s->buf, e, strlen(e)) : st_buf_append(&s->buf, p, 1))
      s->oom = 1;
  }
}

void an__svg_begin(an__svg *s, double width, double height, const char *title)
{
  st_buf_init(&s->buf);
  s->width = width;
  s->height = height;
  s->oom = 0;
  s->text_fill = NULL;
  add(s,
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n",
      width, height, width, height);
  if (title) {
    add(s, "<title>");
    add_escaped(s, title);
    add(s, "</title>\n");
  }
  add(s, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", width, height);
}

void an__svg_rect(an__svg *s, double x, double y, double w, double h, const char *fill,
                  const char *title)
{
  add(s, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"", x, y,
      w > 0 ? w : 0, h > 0 ? h : 0, fill);
  if (title) {
    add(s, "><title>");
    add_escaped(s, title);
    add(s, "</title></rect>\n");
  } else {
    add(s, "/>\n");
  }
}

void an__svg_line(an__svg *s, double x1, double y1, double x2, double y2, const char *stroke,
                  double width)
{
  add(s, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" stroke-width=\"%.2f\"/>\n",
      x1, y1, x2, y2, stroke, width);
}

void an__svg_polyline(an__svg *s, const double *x, const double *y, size_t n, const char *stroke,
                      double width, const char *title)
{
  add(s, "<polyline points=\"");
  for (size_t i = 0; i < n; i++)
    add(s, "%s%.2f,%.2f", i ? " " : "", x[i], y[i]);
  add(s, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.2f\"", stroke, width);
  if (title) {
    add(s, "><title>");
    add_escaped(s, title);
    add(s, "</title></polyline>\n");
  } else {
    add(s, "/>\n");
  }
}

void an__svg_circle(an__svg *s, double cx, double cy, double r, const char *fill,
                    const char *title)
{
  add(s, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%.2f\" fill=\"%s\"", cx, cy, r, fill);
  if (title) {
    add(s, "><title>");
    add_escaped(s, title);
    add(s, "</title></circle>\n");
  } else {
    add(s, "/>\n");
  }
}

void an__svg_text(an__svg *s, double x, double y, const char *anchor, double size, double rotate,
                  const char *fmt, ...)
{
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  add(s, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.1f\" text-anchor=\"%s\"", x, y, size, anchor);
  if (s->text_fill)
    add(s, " fill=\"%s\"", s->text_fill);
  if (rotate != 0)
    add(s, " transform=\"rotate(%.1f %.2f %.2f)\"", rotate, x, y);
  add(s, ">");
  add_escaped(s, text);
  add(s, "</text>\n");
}

void an__svg_group(an__svg *s, const char *id)
{
  add(s, "<g id=\"");
  add_escaped(s, id);
  add(s, "\">\n");
}

void an__svg_group_end(an__svg *s) { add(s, "</g>\n"); }

void an__svg_release(an__svg *s) { st_buf_release(&s->buf); }

int an__svg_finish(an__svg *s, const char *path, st_err *err)
{
  add(s, "</svg>\n");
  if (s->oom) {
    an__svg_release(s);
    return st_err_set(err, ST_ENOMEM, "plot '%s': out of memory", path);
  }
  int rc = st_file_write_atomic(path, s->buf.data, s->buf.len, 0, err);
  an__svg_release(s);
  return rc; /* "cannot write 'x.svg': ..." names the file already */
}

double an__nice_step(double max, int want)
{
  if (!(max > 0) || !isfinite(max))
    return 1;
  double raw = max / (want > 0 ? want : 1);
  double p = pow(10, floor(log10(raw)));
  double f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}
