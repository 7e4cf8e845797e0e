/* Write a DiskSim g2 raw layout map ("Layout Map File", read by
   diskmodel/layout_g2_load.c layout_g2_loadmap) holding the LBN->PBN
   mapping DiskSim's own layout of a model computes: every LBN 0..N-1 through
   d->layout->dm_translate_ltop (MAP_FULL), consecutive blocks on one track at
   consecutive sectors joined into one extent line
       lbn L --> cyl C, head H, sect S, seqcnt K     (K = blocks - 1)
   usage (driver.c's): g2_mapgen MODEL_FILE DM_DISK_NAME OUT_MAP [blocks] */
#include <stdio.h>
#include <stdlib.h>
#include <diskmodel/dm.h>
#include <libddbg/libddbg.h>
int minargs = 2;  /* driver.c wants argc >= minargs + 2 */
void testsUsage(void) { fprintf(stderr, "usage: g2_mapgen <model> <name> <out> [blocks]\n"); }
int doTests(struct dm_disk_if *d, int argc, char **argv) {
  FILE *f = fopen(argv[3], "w");
  int n = argc > 4 ? atoi(argv[4]) : d->dm_sectors;
  int lbn, first = 0, extents = 0;
  struct dm_pbn start, prev, p;
  fprintf(f, "# DiskSim g2 layout map: %s %s\n", argv[1], argv[2]);
  fprintf(f, "# extents from DiskSim's own dm_translate_ltop (g2_mapgen.c)\n");
  fprintf(f, "%d cylinders, %d rot, %d heads\n", d->dm_cyls, 0, d->dm_surfaces);
  for (lbn = 0; lbn <= n; lbn++) {
    if (lbn < n) {
      dm_ptol_result_t rc = d->layout->dm_translate_ltop(d, lbn, MAP_FULL, &p, 0);
      if (rc != DM_OK) { fprintf(stderr, "lbn %d: ltop returned %d\n", lbn, rc); return 1; }
    }
    if (lbn > 0 && (lbn == n || p.cyl != prev.cyl || p.head != prev.head || p.sector != prev.sector + 1)) {
      fprintf(f, "lbn %d --> cyl %d, head %d, sect %d, seqcnt %d\n", first, start.cyl, start.head,
              start.sector, lbn - 1 - first);
      extents++;
      first = lbn;
      start = p;
    }
    if (lbn == 0) start = p;
    prev = p;
  }
  fclose(f);
  fprintf(stderr, "%d blocks, %d extents\n", n, extents);
  return 0;
}
