/* cluster.c — cluster specs and presets.
 *
 * This first version knows one node shape: eight H100-SXM GPUs on a
 * non-blocking NVSwitch, each GPU with its own 400 Gb/s NIC (rail), and any
 * number of such nodes behind one non-blocking switch ("node8[:NODES]").
 * Route inside a node: GPU i's NVLink up, GPU j's NVLink down; across nodes:
 * GPU i's NIC up, GPU j's NIC down.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "platform.h"
#include "plat_int.h"

static const char *const preset_names[] = {"node8", NULL};

const char *const *plat_preset_names(void) { return preset_names; }

void plat_device_h100_sxm(plat_device *d)
{
  memset(d, 0, sizeof *d);
  snprintf(d->name, sizeof d->name, "H100-SXM");
  /* NVIDIA H100 Tensor Core GPU datasheet, SXM column, dense (without sparsity). */
  d->peak_flops[WL_DTYPE_FP32] = 67e12;
  d->peak_flops[WL_DTYPE_TF32] = 494.7e12;
  d->peak_flops[WL_DTYPE_BF16] = 989.4e12;
  d->peak_flops[WL_DTYPE_FP16] = 989.4e12;
  d->peak_flops[WL_DTYPE_FP8] = 1978.9e12;
  d->hbm_bytes = 80e9;
  d->hbm_Bps = 3.35e12;
  d->link_Bps = 450e9; /* NVLink 4: 900 GB/s bidirectional */
}

static int parse_nodes(const char *s, int *nodes)
{
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno || v <= 0 || v > INT_MAX / 1024)
    return -1;
  *nodes = (int)v;
  return 0;
}

int plat_cluster_load(const char *arg, plat_cluster **out, st_err *err)
{
  char name[64];
  const char *colon = strchr(arg, ':');
  size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
  if (n >= sizeof name)
    return st_err_set(err, ST_EINPUT, "cluster '%s': name is too long", arg);
  memcpy(name, arg, n);
  name[n] = '\0';
  int nodes = 1;
  if (colon && parse_nodes(colon + 1, &nodes))
    return st_err_set(err, ST_EINPUT, "cluster '%s': node count '%s' is not a positive integer",
                      arg, colon + 1);
  if (strcmp(name, "node8") != 0)
    return st_err_set(err, ST_EINPUT, "cluster '%s': no such preset (known: node8)", arg);

  plat_cluster *c = calloc(1, sizeof *c);
  if (!c)
    return st_err_set(err, ST_ENOMEM, "out of memory");
  snprintf(c->name, sizeof c->name, "%s:%d", name, nodes);
  c->num_nodes = nodes;
  c->gpus_per_node = 8;
  c->num_gpus = nodes * 8;
  plat_device_h100_sxm(&c->device);
  c->intra_kind = PLAT_INTRA_NVSWITCH;
  c->intra_Bps = 450e9;
  c->intra_lat_s = 0.5e-6;
  c->nics_per_node = 8;
  c->nic_Bps = 50e9; /* 400 Gb/s */
  c->nic_lat_s = 1e-6;
  c->fabric_kind = PLAT_FABRIC_SWITCH;
  c->fabric_levels = 1;
  for (int i = 0; i < 4; i++)
    c->oversub[i] = 1.0;
  c->switch_lat_s = 0;
  c->torus_dims[0] = c->torus_dims[1] = c->torus_dims[2] = 1;
  st_buf b;
  st_buf_init(&b);
  st_buf_printf(&b,
                "{\"name\":\"%s\",\"nodes\":%d,\"gpus_per_node\":8,\"device\":\"%s\","
                "\"intra\":{\"kind\":\"nvswitch\",\"bw_GBps\":%g,\"lat_us\":%g},"
                "\"nic\":{\"per_node\":8,\"bw_GBps\":%g,\"lat_us\":%g},"
                "\"fabric\":{\"kind\":\"switch\"}}",
                c->name, nodes, c->device.name, c->intra_Bps / 1e9, c->intra_lat_s * 1e6,
                c->nic_Bps / 1e9, c->nic_lat_s * 1e6);
  c->spec_json = st_buf_detach(&b, NULL);
  *out = c;
  return ST_OK;
}

void plat_cluster_destroy(plat_cluster *c)
{
  if (!c)
    return;
  free(c->spec_json);
  free(c->xml_path);
  free(c);
}

int plat_cluster_write_xml(const plat_cluster *c, FILE *out, st_err *err)
{
  fprintf(out, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4.1\">\n<zone id=\"%s\" routing=\"Full\">\n",
          c->name);
  double speed = c->device.peak_flops[WL_DTYPE_BF16];
  for (int g = 0; g < c->num_gpus; g++)
    fprintf(out, "  <host id=\"gpu-%d\" speed=\"%.17g\"/>\n", g, speed);
  for (int g = 0; g < c->num_gpus; g++) {
    fprintf(out, "  <link id=\"nvl-%d\" bandwidth=\"%.17gBps\" latency=\"%.17gs\" sharing_policy=\"SPLITDUPLEX\"/>\n",
            g, c->intra_Bps, c->intra_lat_s);
    fprintf(out, "  <link id=\"nic-%d\" bandwidth=\"%.17gBps\" latency=\"%.17gs\" sharing_policy=\"SPLITDUPLEX\"/>\n",
            g, c->nic_Bps, c->nic_lat_s);
  }
  for (int i = 0; i < c->num_gpus; i++)
    for (int j = i + 1; j < c->num_gpus; j++) {
      const char *l = plat_gpu_node(c, i) == plat_gpu_node(c, j) ? "nvl" : "nic";
      fprintf(out,
              "  <route src=\"gpu-%d\" dst=\"gpu-%d\"><link_ctn id=\"%s-%d\" direction=\"UP\"/>"
              "<link_ctn id=\"%s-%d\" direction=\"DOWN\"/></route>\n",
              i, j, l, i, l, j);
    }
  fprintf(out, "</zone>\n</platform>\n");
  if (ferror(out))
    return st_err_set(err, ST_EIO, "cannot write the platform XML");
  return ST_OK;
}
