/*
 * eal_cleanup.h - end a test process's EAL and remove its runtime directory.
 *
 * rte_eal_cleanup() leaves /var/run/dpdk/<file-prefix> behind; the suite ends
 * by checking that nothing under its prefix (skl-test-) is left, so the
 * in-process DPDK tests remove theirs. Run them with --no-shconf, which keeps
 * shared files out of it (--in-memory would too, but not with --no-huge).
 */
#ifndef SKL_TEST_EAL_CLEANUP_H
#define SKL_TEST_EAL_CLEANUP_H

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include <rte_eal.h>

static inline void test_eal_cleanup(void)
{
	char dir[PATH_MAX];
	DIR *d;
	struct dirent *e;

	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[PATH_MAX + 256];

		if (e->d_name[0] == '.' &&
		    (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

#endif
