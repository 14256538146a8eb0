/* xml.c — SimGrid XML platforms: writing one equivalent to a cluster, and
 * reading what simtrain needs from a user's platform file.
 *
 * Writing: one Full zone with every GPU as a host, every directed link of the
 * cluster (same names, bandwidths and latencies as the built platform) and
 * an explicit route for every ordered GPU pair (from plat_route_get(), so the
 * routes are the built platform's).  Switch latency, which the built
 * platform adds to a route's latency per switch crossed, becomes FATPIPE
 * links "switch-hop-<k>" (latency switch_lat, bandwidth 1e18 B/s, never a
 * bottleneck) appended to a route that crosses k or more switches.  The file
 * grows with the square of the GPUs, hence the limit PLAT_XML_MAX_GPUS.
 *
 * Reading (the naming rule, docs/platforms.md): the platform's hosts must be
 * named gpu-0 ... gpu-(N-1), each once, declared with <host id=...> or
 * <cluster prefix=... radical=... suffix=...>; optional properties
 * simtrain.gpus_per_node (default 1) and simtrain.device (default H100-SXM).
 * This is a text scan, not an XML parser: SimGrid itself parses the file at
 * plat_cluster_build() and reports its own errors.  What SimGrid would not
 * report but crash on is checked here or there: every ordered pair of a Full
 * zone's own GPU hosts needs a route (scan), and every link a positive,
 * finite bandwidth (build.cpp, on the rates SimGrid parsed).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plat_int.h"

#define PLAT_XML_MAX_GPUS 256

/* s as the text of an XML attribute or comment (truncated to fit cap). */
static void xml_escape(const char *s, char *out, size_t cap)
{
  size_t n = 0;
  for (; *s && n + 7 < cap; s++) {
    const char *e = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;"
                  : *s == '"' ? "&quot;" : *s == '\'' ? "&apos;" : NULL;
    if (e)
      n += (size_t)snprintf(out + n, cap - n, "%s", e);
    else
      out[n++] = *s;
  }
  out[n] = '\0';
}

int plat_cluster_write_xml(const plat_cluster *c, FILE *out, st_err *err)
{
  if (c->fabric_kind == PLAT_FABRIC_XML)
    return st_err_set(err, ST_EINPUT, "cluster '%s' is already a SimGrid XML file ('%s')", c->name,
                      c->xml_path);
  if (!plat_gpus_per_node_uniform(c))
    return st_err_set(err, ST_EINPUT,
                      "cluster '%s': its node groups have unlike GPUs per node, which the XML's "
                      "simtrain.gpus_per_node cannot say; simtrain builds it in memory", c->name);
  if (c->num_gpus > PLAT_XML_MAX_GPUS)
    return st_err_set(err, ST_EINPUT,
                      "cluster '%s': %d GPUs; XML with explicit routes is written only up to %d "
                      "GPUs (it grows with the square of the GPUs); simtrain builds larger "
                      "clusters in memory",
                      c->name, c->num_gpus, PLAT_XML_MAX_GPUS);
  plat__lay L;
  plat__layout(c, &L);
  /* the most switches any route crosses */
  int maxsw = 0;
  plat_route *r = malloc(sizeof *r);
  if (!r)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  for (int i = 0; i < c->num_gpus; i++)
    for (int j = 0; j < c->num_gpus; j++) {
      int rc = plat_route_get(c, i, j, r, err);
      if (rc) {
        free(r);
        return rc;
      }
      if (r->switches > maxsw)
        maxsw = r->switches;
    }
  if (c->switch_lat_s <= 0)
    maxsw = 0;
  char name[6 * sizeof c->name]; /* the name as XML text: &, <, >, " and ' escaped */
  xml_escape(c->name, name, sizeof name);
  fprintf(out,
          "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
          "<!-- cluster %s: %d GPUs (%d nodes x %d), written by simtrain platform -->\n"
          "<platform version=\"4.1\">\n<zone id=\"%s\" routing=\"Full\">\n"
          "  <prop id=\"simtrain.gpus_per_node\" value=\"%d\"/>\n"
          "  <prop id=\"simtrain.device\" value=\"%s\"/>\n",
          strstr(name, "--") ? "(see the zone id)" : name, c->num_gpus, c->num_nodes,
          c->gpus_per_node, name, c->gpus_per_node, c->device.name);
  if (c->num_groups > 1) { /* node groups: each one's device and node count, in order */
    fprintf(out, "  <prop id=\"simtrain.groups\" value=\"");
    for (int k = 0; k < c->num_groups; k++)
      fprintf(out, "%s%s:%d", k ? ";" : "", c->groups[k].device.name, c->groups[k].num_nodes);
    fprintf(out, "\"/>\n");
  }
  double speed = c->device.peak_flops[WL_DTYPE_BF16];
  if (speed <= 0)
    speed = c->device.peak_flops[WL_DTYPE_FP16];
  for (int g = 0; g < c->num_gpus; g++)
    fprintf(out, "  <host id=\"gpu-%d\" speed=\"%.17gf\"/>\n", g, speed);
  for (int n = 0; c->host_memory && n < c->num_nodes; n++) /* host memory (host.c) */
    fprintf(out, "  <host id=\"host-%d\" speed=\"1e9f\"/>\n", n);
  for (long id = 0; id < L.total; id++) {
    plat_link_info li;
    plat__link_info(c, &L, id, &li);
    if (li.kind == PLAT_LINK_UNUSED) /* no route crosses it */
      continue;
    fprintf(out, "  <link id=\"%s\" bandwidth=\"%.17gBps\" latency=\"%.17gs\"/>\n", li.name,
            li.bw_Bps, li.lat_s);
  }
  for (int k = 1; k <= maxsw; k++)
    fprintf(out,
            "  <link id=\"switch-hop-%d\" bandwidth=\"1e18Bps\" latency=\"%.17gs\" "
            "sharing_policy=\"FATPIPE\"/>\n",
            k, c->switch_lat_s);
  for (int i = 0; i < c->num_gpus; i++)
    for (int j = 0; j < c->num_gpus; j++) {
      if (i == j)
        continue;
      plat_route_get(c, i, j, r, NULL);
      fprintf(out, "  <route src=\"gpu-%d\" dst=\"gpu-%d\" symmetrical=\"NO\">", i, j);
      for (int k = 0; k < r->n; k++)
        fprintf(out, "<link_ctn id=\"%s\"/>", r->links[k].name);
      for (int k = 1; k <= r->switches && k <= maxsw; k++)
        fprintf(out, "<link_ctn id=\"switch-hop-%d\"/>", k);
      fprintf(out, "</route>\n");
    }
  for (int g = 0; c->host_memory && g < c->num_gpus; g++)
    for (int back = 0; back < 2; back++) {
      int h = plat_host_endpoint(c, plat_gpu_node(c, g));
      plat_route_get(c, back ? h : g, back ? g : h, r, NULL);
      if (back)
        fprintf(out, "  <route src=\"host-%d\" dst=\"gpu-%d\" symmetrical=\"NO\">",
                plat_gpu_node(c, g), g);
      else
        fprintf(out, "  <route src=\"gpu-%d\" dst=\"host-%d\" symmetrical=\"NO\">", g,
                plat_gpu_node(c, g));
      for (int k = 0; k < r->n; k++)
        fprintf(out, "<link_ctn id=\"%s\"/>", r->links[k].name);
      fprintf(out, "</route>\n");
    }
  free(r);
  fprintf(out, "</zone>\n</platform>\n");
  if (ferror(out))
    return st_err_set(err, ST_EIO, "cluster '%s': cannot write the platform XML", c->name);
  return ST_OK;
}

/* ---- reading ------------------------------------------------------------- */

/* value of attribute name in the tag starting at p (up to '>'), into buf */
static int attr(const char *p, const char *name, char *buf, size_t n)
{
  const char *end = strchr(p, '>');
  size_t nl = strlen(name);
  for (const char *q = p; q && q < end; q++) {
    if (strncmp(q, name, nl) || !isspace((unsigned char)q[-1]))
      continue;
    const char *v = q + nl;
    while (isspace((unsigned char)*v))
      v++;
    if (*v != '=')
      continue;
    v++;
    while (isspace((unsigned char)*v))
      v++;
    char quote = *v;
    if (quote != '"' && quote != '\'')
      return -1;
    const char *e = strchr(v + 1, quote);
    if (!e || (size_t)(e - v - 1) >= n)
      return -1;
    memcpy(buf, v + 1, (size_t)(e - v - 1));
    buf[e - v - 1] = '\0';
    return 0;
  }
  return -1;
}

/* The line of p in text, for messages. */
static int line_of(const char *text, const char *p)
{
  long line, col;
  size_t off = (size_t)(p - text);
  st_text_line_col(text, off, off, &line, &col);
  return (int)line;
}

typedef struct seen_set {
  unsigned char *bits;
  long cap, count, max;
} seen_set;

static int seen_add(seen_set *s, long g)
{
  if (g >= s->cap) {
    long nc = s->cap ? s->cap : 1024;
    while (nc <= g)
      nc *= 2;
    unsigned char *nb = realloc(s->bits, (size_t)nc);
    if (!nb)
      return -2;
    memset(nb + s->cap, 0, (size_t)(nc - s->cap));
    s->bits = nb;
    s->cap = nc;
  }
  if (s->bits[g])
    return -1;
  s->bits[g] = 1;
  s->count++;
  if (g + 1 > s->max)
    s->max = g + 1;
  return 0;
}

/* "host-<n>": a node's host memory, not a GPU. */
static int host_memory_name(const char *name)
{
  if (strncmp(name, "host-", 5) || !isdigit((unsigned char)name[5]))
    return 0;
  char *end;
  strtol(name + 5, &end, 10);
  return *end == '\0';
}

/* "gpu-<digits>" -> index, else -1 */
static long gpu_index(const char *name)
{
  if (strncmp(name, "gpu-", 4) || !isdigit((unsigned char)name[4]))
    return -1;
  char *end;
  long v = strtol(name + 4, &end, 10);
  if (*end || v < 0 || v >= (1L << 24) || (name[4] == '0' && name[5]))
    return -1;
  return v;
}

/* A zone being scanned: its GPU hosts and, if its routing is Full, the
 * routes it declares between them (src << 32 | dst).  SimGrid dereferences a
 * missing Full route (a segfault, not an error), so every ordered pair of a
 * Full zone's own hosts must have one; hosts of nested zones and <cluster>s
 * are routed by those. */
typedef struct xml_zone {
  char id[64];
  int full, line;
  long *hosts;
  long nhosts, caphosts;
  uint64_t *pairs;
  long npairs, cappairs;
} xml_zone;

#define XML_ZONE_DEPTH 32
#define XML_ROUTE_CHECK_MAX_HOSTS 4096 /* n^2 pairs checked; larger Full zones are SimGrid's */

static int push_long(long **v, long *n, long *cap, long x)
{
  if (*n == *cap) {
    long nc = *cap ? 2 * *cap : 16;
    long *nv = realloc(*v, (size_t)nc * sizeof *nv);
    if (!nv)
      return -1;
    *v = nv;
    *cap = nc;
  }
  (*v)[(*n)++] = x;
  return 0;
}

static int push_pair(xml_zone *z, long a, long b)
{
  if (z->npairs == z->cappairs) {
    long nc = z->cappairs ? 2 * z->cappairs : 64;
    uint64_t *nv = realloc(z->pairs, (size_t)nc * sizeof *nv);
    if (!nv)
      return -1;
    z->pairs = nv;
    z->cappairs = nc;
  }
  z->pairs[z->npairs++] = (uint64_t)a << 32 | (uint64_t)b;
  return 0;
}

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* 0, or an error naming the first ordered pair of z's hosts without a route */
static int zone_check_routes(const char *path, xml_zone *z, st_err *err)
{
  if (!z->full || z->nhosts < 2 || z->nhosts > XML_ROUTE_CHECK_MAX_HOSTS)
    return ST_OK;
  if (z->npairs > 0)
    qsort(z->pairs, (size_t)z->npairs, sizeof *z->pairs, cmp_u64);
  for (long i = 0; i < z->nhosts; i++)
    for (long j = 0; j < z->nhosts; j++) {
      long a = z->hosts[i], b = z->hosts[j];
      if (a == b)
        continue;
      uint64_t key = (uint64_t)a << 32 | (uint64_t)b;
      if (z->npairs == 0 || !bsearch(&key, z->pairs, (size_t)z->npairs, sizeof key, cmp_u64))
        return st_err_set(err, ST_EINPUT,
                          "platform '%s': line %d: zone '%s' (routing Full) has no route from "
                          "gpu-%ld to gpu-%ld",
                          path, z->line, z->id, a, b);
    }
  return ST_OK;
}

static void zone_release(xml_zone *z)
{
  free(z->hosts);
  free(z->pairs);
  memset(z, 0, sizeof *z);
}

/* simtrain.groups "DEVICE:NODES;DEVICE:NODES..." (what plat_cluster_write_xml
 * writes for node groups) into c->groups: each group's device and nodes (the
 * links are the file's). */
static int xml_groups(const char *path, int line, const char *v, plat_cluster *c, st_err *err)
{
  int n = 1;
  for (const char *q = v; *q; q++)
    n += *q == ';';
  if (!(c->groups = calloc((size_t)n, sizeof *c->groups)))
    return st_err_set(err, ST_ENOMEM, "out of memory");
  char item[256];
  int node = 0;
  for (int k = 0; k < n; k++) {
    const char *e = strchr(v, ';');
    size_t len = e ? (size_t)(e - v) : strlen(v);
    snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), v);
    v += len + (e ? 1 : 0);
    char *colon = strrchr(item, ':'), *end = NULL;
    long nodes = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || *end || nodes < 1 || node + nodes > c->num_nodes)
      return st_err_set(err, ST_EINPUT,
                        "platform '%s': line %d: simtrain.groups item %d '%s' is not DEVICE:NODES "
                        "within the %d nodes",
                        path, line, k, item, c->num_nodes);
    *colon = '\0';
    plat_group *g = &c->groups[k];
    if (plat__device_find(item, &g->device, err))
      return st_err_prefix(err, "platform '%s': line %d: simtrain.groups: ", path, line);
    snprintf(g->name, sizeof g->name, "%s", item);
    g->first_node = node;
    g->first_gpu = node * c->gpus_per_node;
    g->num_nodes = (int)nodes;
    g->gpus_per_node = c->gpus_per_node;
    g->host_power_W = plat_host_power_default(&g->device, c->gpus_per_node);
    node += (int)nodes;
  }
  if (node != c->num_nodes)
    return st_err_set(err, ST_EINPUT, "platform '%s': line %d: simtrain.groups hold %d nodes, the "
                      "platform has %d", path, line, node, c->num_nodes);
  c->num_groups = n;
  c->device = c->groups[0].device;
  c->host_power_W = c->groups[0].host_power_W;
  return ST_OK;
}

/* 1 when SimGrid can read path itself: a regular file whose bytes are the
 * text read (not gzip-compressed). */
static int xml_plain_file(const char *path, size_t len)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == len;
}

/* The text in an unlinked temporary file, for SimGrid to load by the name
 * /proc/self/fd/N: a FIFO, '-' or a gzip file is read once, here. */
static FILE *xml_copy(const char *text, size_t len)
{
  FILE *f = tmpfile();
  if (f && (fwrite(text, 1, len, f) != len || fflush(f))) {
    fclose(f);
    f = NULL;
  }
  return f;
}

/* The cluster of a scanned platform of gpus hosts; it owns copy from here
 * (plat_cluster_destroy closes it, on error too). */
static int xml_cluster(const char *path, int gpus, int gpn, const char *device, const char *groups,
                       int groups_line, FILE *copy, plat_cluster **out, st_err *err)
{
  plat_cluster *c = calloc(1, sizeof *c);
  if (!c) {
    if (copy)
      fclose(copy);
    return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  c->xml_copy = copy;
  if (copy) {
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fileno(copy));
    c->xml_load_path = strdup(p);
  }
  int rc;
  if ((rc = plat__device_find(device, &c->device, err))) {
    plat_cluster_destroy(c);
    return st_err_prefix(err, "platform '%s': simtrain.device: ", path);
  }
  snprintf(c->name, sizeof c->name, "%s", st_path_basename(path));
  c->num_gpus = gpus;
  c->gpus_per_node = gpn;
  c->num_nodes = c->num_gpus / gpn;
  c->host_power_W = plat_host_power_default(&c->device, gpn);
  c->host_mem_bytes = NAN; /* the file's own links carry copies to host-<n>, if it has them */
  c->host_adam_params_per_s = PLAT_HOST_ADAM_PARAMS_PER_S;
  c->default_nodes = c->num_nodes;
  c->fabric_kind = PLAT_FABRIC_XML;
  c->intra_kind = PLAT_INTRA_NONE;
  for (int i = 0; i < 4; i++)
    c->oversub[i] = 1;
  c->torus_dims[0] = c->torus_dims[1] = c->torus_dims[2] = 1;
  if (groups[0] && (rc = xml_groups(path, groups_line, groups, c, err))) {
    plat_cluster_destroy(c);
    return rc;
  }
  c->xml_path = strdup(path);
  st_buf b;
  st_buf_init(&b);
  st_buf_printf(&b, "{\"xml\":");
  st_buf_json_str(&b, c->name);
  st_buf_printf(&b, ",\"gpus\":%d,\"gpus_per_node\":%d,\"device\":", c->num_gpus, gpn);
  st_buf_json_str(&b, c->device.name);
  st_buf_printf(&b, "}");
  c->spec_json = st_buf_detach(&b, NULL);
  if (!c->xml_path || !c->spec_json || (copy && !c->xml_load_path)) {
    plat_cluster_destroy(c);
    return st_err_set(err, ST_ENOMEM, "out of memory");
  }
  *out = c;
  return ST_OK;
}

/* A <cluster> element at p: its hosts (radical "0-7,16") into the seen set;
 * they must be named gpu-<index>. */
static int xml_radical(const char *path, const char *text, const char *p, seen_set *s, st_err *err)
{
  char prefix[64] = "", suffix[64] = "", buf[4096];
  int rc = ST_OK;
  attr(p, "prefix", prefix, sizeof prefix);
  attr(p, "suffix", suffix, sizeof suffix);
  if (attr(p, "radical", buf, sizeof buf) || strcmp(prefix, "gpu-") || suffix[0])
    return st_err_set(err, ST_EINPUT,
                      "platform '%s': line %d: cluster hosts must be named gpu-<index> "
                      "(prefix=\"gpu-\", no suffix, a radical)",
                      path, line_of(text, p));
  for (char *tok = strtok(buf, ","); tok && !rc; tok = strtok(NULL, ",")) {
    char *dash = strchr(tok, '-');
    long a = strtol(tok, NULL, 10), b = dash ? strtol(dash + 1, NULL, 10) : a;
    if (a < 0 || b < a || b >= (1L << 24))
      return st_err_set(err, ST_EINPUT, "platform '%s': line %d: radical '%s' is not valid", path,
                        line_of(text, p), tok);
    for (long g = a; g <= b && !rc; g++)
      if ((rc = seen_add(s, g)))
        rc = st_err_set(err, rc == -2 ? ST_ENOMEM : ST_EINPUT,
                        "platform '%s': line %d: host 'gpu-%ld' is declared twice", path,
                        line_of(text, p), g);
  }
  return rc;
}

int plat__xml_load(const char *path, plat_cluster **out, st_err *err)
{
  char *text;
  size_t len;
  int rc = st_file_read_all(path, &text, &len, err);
  if (rc)
    return rc;
  seen_set s = {0};
  int gpn = 1;
  char device[48] = "H100-SXM";
  char groups[1024] = ""; /* simtrain.groups: DEVICE:NODES;... */
  int groups_line = 0;
  char buf[4096];
  xml_zone zones[XML_ZONE_DEPTH];
  memset(zones, 0, sizeof zones);
  int depth = 0; /* open zones; only the innermost XML_ZONE_DEPTH are tracked */
  for (const char *p = strchr(text, '<'); p && !rc; p = strchr(p + 1, '<')) {
    if (!strncmp(p, "<!--", 4)) {
      const char *e = strstr(p, "-->");
      if (!e)
        break;
      p = e;
      continue;
    }
    xml_zone *z = depth > 0 && depth <= XML_ZONE_DEPTH ? &zones[depth - 1] : NULL;
    if ((!strncmp(p, "<zone", 5) && isspace((unsigned char)p[5])) ||
        (!strncmp(p, "<AS", 3) && isspace((unsigned char)p[3]))) {
      const char *e = strchr(p, '>');
      if (e && e[-1] == '/')
        continue; /* an empty zone */
      depth++;
      if (depth <= XML_ZONE_DEPTH) {
        z = &zones[depth - 1];
        char routing[32] = "";
        if (attr(p, "id", z->id, sizeof z->id))
          snprintf(z->id, sizeof z->id, "?");
        attr(p, "routing", routing, sizeof routing);
        z->full = !strcmp(routing, "Full");
        z->line = line_of(text, p);
      }
      continue;
    }
    if (!strncmp(p, "</zone", 6) || !strncmp(p, "</AS", 4)) {
      if (z) {
        rc = zone_check_routes(path, z, err);
        zone_release(z);
      }
      if (depth > 0)
        depth--;
      continue;
    }
    if (z && z->full && !strncmp(p, "<route", 6) && isspace((unsigned char)p[6])) {
      char src[64], dst[64], sym[8] = "YES";
      if (attr(p, "src", src, sizeof src) || attr(p, "dst", dst, sizeof dst))
        continue;
      attr(p, "symmetrical", sym, sizeof sym);
      long a = gpu_index(src), b = gpu_index(dst);
      if (a < 0 || b < 0)
        continue;
      if (push_pair(z, a, b) || (strcmp(sym, "NO") && strcmp(sym, "no") && push_pair(z, b, a)))
        rc = st_err_set(err, ST_ENOMEM, "platform '%s': out of memory", path);
      continue;
    }
    int is_host = !strncmp(p, "<host", 5) && isspace((unsigned char)p[5]);
    int is_cluster = !strncmp(p, "<cluster", 8) && isspace((unsigned char)p[8]);
    int is_prop = !strncmp(p, "<prop", 5) && isspace((unsigned char)p[5]);
    if (is_prop) {
      char v[1024];
      if (attr(p, "id", buf, sizeof buf) || attr(p, "value", v, sizeof v))
        continue;
      if (!strcmp(buf, "simtrain.gpus_per_node")) {
        char *end;
        long x = strtol(v, &end, 10);
        if (*end || x < 1 || x > 1 << 20)
          rc = st_err_set(err, ST_EINPUT,
                          "platform '%s': line %d: simtrain.gpus_per_node '%s' is not a positive "
                          "integer",
                          path, line_of(text, p), v);
        gpn = (int)x;
      } else if (!strcmp(buf, "simtrain.device")) {
        snprintf(device, sizeof device, "%s", v);
      } else if (!strcmp(buf, "simtrain.groups")) {
        snprintf(groups, sizeof groups, "%s", v);
        groups_line = line_of(text, p);
      }
    } else if (is_host) {
      if (attr(p, "id", buf, sizeof buf))
        continue;
      if (host_memory_name(buf))
        continue; /* a node's host memory (docs/platforms.md, "Host memory") */
      long g = gpu_index(buf);
      if (g < 0)
        rc = st_err_set(err, ST_EINPUT,
                        "platform '%s': line %d: host '%s' does not follow the naming rule "
                        "gpu-<index>",
                        path, line_of(text, p), buf);
      else if ((rc = seen_add(&s, g)))
        rc = st_err_set(err, rc == -2 ? ST_ENOMEM : ST_EINPUT,
                        "platform '%s': line %d: host '%s' is declared twice", path,
                        line_of(text, p), buf);
      else if (z && push_long(&z->hosts, &z->nhosts, &z->caphosts, g))
        rc = st_err_set(err, ST_ENOMEM, "platform '%s': out of memory", path);
    } else if (is_cluster) {
      rc = xml_radical(path, text, p, &s, err);
    }
  }
  for (int i = 0; i < XML_ZONE_DEPTH; i++)
    zone_release(&zones[i]);
  FILE *copy = NULL;
  if (!rc && !xml_plain_file(path, len) && !(copy = xml_copy(text, len)))
    rc = st_err_set(err, ST_EIO, "platform '%s': cannot keep a copy for SimGrid: %s", path,
                    strerror(errno));
  free(text);
  if (!rc && s.count == 0)
    rc = st_err_set(err, ST_EINPUT, "platform '%s': no host named gpu-<index> (see the naming rule in "
                    "docs/platforms.md)", path);
  if (!rc && s.count != s.max) {
    long missing = 0;
    while (s.bits[missing])
      missing++;
    rc = st_err_set(err, ST_EINPUT, "platform '%s': hosts gpu-0 ... gpu-%ld are expected, gpu-%ld is missing",
                    path, s.max - 1, missing);
  }
  if (!rc && s.count % gpn)
    rc = st_err_set(err, ST_EINPUT, "platform '%s': %ld hosts are not whole nodes of %d (simtrain.gpus_per_node)",
                    path, s.count, gpn);
  free(s.bits);
  if (rc) {
    if (copy)
      fclose(copy);
    return rc;
  }
  return xml_cluster(path, (int)s.count, gpn, device, groups, groups_line, copy, out, err);
}
