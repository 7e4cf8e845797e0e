/* Print DiskSim's LBN->PBN mapping for the LBNs listed in a file (one a line).
   Each line: lbn cyl head sector skew_u32 spt l0 ln  (skew: dm_pbn_skew of the pbn;
   l0/ln: dm_get_track_boundaries; -1 where DiskSim aborted or failed). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include <diskmodel/dm.h>
#include <libddbg/libddbg.h>
int minargs = 2;
void testsUsage(void) { fprintf(stderr, "usage: mapdump <model> <name> <lbnfile>\n"); }
int doTests(struct dm_disk_if *d, int argc, char **argv) {
  FILE *f = fopen(argv[3], "r");
  long long lbn;
  while (fscanf(f, "%lld", &lbn) == 1) {
    struct dm_pbn p;
    int pfd[2];
    long long out[4] = {-1, -1, -1, -1};
    dm_ptol_result_t rc = d->layout->dm_translate_ltop(d, lbn, MAP_FULL, &p, 0);
    if (rc == DM_NX) { printf("%lld NX\n", lbn); continue; }
    pipe(pfd);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      struct dm_pbn q = p;
      long long r[4];
      close(pfd[0]);
      r[0] = (unsigned)d->layout->dm_pbn_skew(d, &q);
      q = p;
      r[1] = d->layout->dm_get_sectors_lbn(d, lbn);
      write(pfd[1], r, 2 * sizeof(long long));
      {
        LBA_t l0 = -1, ln = -1;
        q = p;
        d->layout->dm_get_track_boundaries(d, &q, &l0, &ln, 0);
        r[2] = l0; r[3] = ln;
        write(pfd[1], r + 2, 2 * sizeof(long long));
      }
      _exit(0);
    }
    close(pfd[1]);
    int got = 0, n;
    while ((n = read(pfd[0], ((char *)out) + got, sizeof(out) - got)) > 0) got += n;
    close(pfd[0]);
    waitpid(pid, 0, 0);
    printf("%lld %d %d %d %lld %lld %lld %lld\n", lbn, p.cyl, p.head, p.sector, out[0], out[1], out[2], out[3]);
  }
  return 0;
}
