/* xml_check.h — an XML well-formedness check for the SVG the plots write,
 * shared by the test programs that plot (test_analysis.c, test_sweep_plot.c).
 * Static functions only: each test program includes it once. */
#ifndef TEST_XML_CHECK_H
#define TEST_XML_CHECK_H

#include <stddef.h>
#include <string.h>

/* XML well-formedness, enough for our SVG: one root element, tags nest and
 * match, attribute values quoted without '<', every '&' starts a known
 * entity or a character reference, comments and the prolog skipped.
 * Returns NULL, or what is wrong. */
static const char *entity_ok(const char *p)
{
  static const char *const known[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
  for (size_t i = 0; i < 5; i++)
    if (!strncmp(p, known[i], strlen(known[i])))
      return NULL;
  if (p[1] == '#') {
    const char *q = p + 2;
    while (*q && *q != ';' && strchr("0123456789xabcdefABCDEF", *q))
      q++;
    if (*q == ';' && q > p + 2)
      return NULL;
  }
  return "bad entity";
}

static int name_char(char c) { return c && (strchr(":_-.", c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')); }

static const char *xml_check(const char *p)
{
  const char *stack[64];
  size_t lens[64], depth = 0;
  int roots = 0;
  if (!strncmp(p, "<?xml", 5)) {
    p = strstr(p, "?>");
    if (!p)
      return "prolog not closed";
    p += 2;
  }
  while (*p) {
    if (*p == '&') {
      if (entity_ok(p))
        return "bad entity in text";
      p++;
    } else if (!strncmp(p, "<!--", 4)) {
      p = strstr(p, "-->");
      if (!p)
        return "comment not closed";
      p += 3;
    } else if (p[0] == '<' && p[1] == '/') {
      const char *n = p + 2, *e = n;
      while (name_char(*e))
        e++;
      if (!depth || (size_t)(e - n) != lens[depth - 1] || strncmp(n, stack[depth - 1], lens[depth - 1]))
        return "end tag does not match";
      depth--;
      while (*e == ' ')
        e++;
      if (*e != '>')
        return "end tag not closed";
      p = e + 1;
    } else if (*p == '<') {
      const char *n = p + 1, *e = n;
      while (name_char(*e))
        e++;
      if (e == n)
        return "tag without a name";
      size_t name_len = (size_t)(e - n);
      if (depth == 0 && ++roots > 1)
        return "more than one root element";
      for (;;) {
        while (*e == ' ' || *e == '\n' || *e == '\t')
          e++;
        if (*e == '>' || (e[0] == '/' && e[1] == '>'))
          break;
        const char *a = e;
        while (name_char(*e))
          e++;
        if (e == a || *e != '=' || (e[1] != '"' && e[1] != '\''))
          return "attribute without a quoted value";
        char q = e[1];
        e += 2;
        while (*e && *e != q) {
          if (*e == '<')
            return "'<' in an attribute value";
          if (*e == '&' && entity_ok(e))
            return "bad entity in an attribute";
          e++;
        }
        if (!*e)
          return "attribute value not closed";
        e++;
      }
      if (*e == '/') {
        p = e + 2;
      } else {
        if (depth == 64)
          return "too deep";
        stack[depth] = n;
        lens[depth++] = name_len;
        p = e + 1;
      }
    } else {
      if (depth == 0 && *p != ' ' && *p != '\n')
        return "text outside the root element";
      p++;
    }
  }
  if (depth)
    return "element not closed";
  return roots == 1 ? NULL : "no root element";
}

#endif
