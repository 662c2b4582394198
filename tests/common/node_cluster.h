/*
 * node_cluster.h - what the integration suites that run real skewless-node
 * processes on 127.0.0.1 share (tests/nodes/test_node.c,
 * tests/agent/test_agent_node.c): a scratch folder per test, the cluster
 * config, node processes, and the test's own socket at the service port,
 * bound and standing in for the switch.
 *
 * Every node started here is killed when the test process exits (atexit) or
 * dies (PR_SET_PDEATHSIG), also when an assertion fails. Include it once, in
 * the suite's only file, after defining MAX_NODES.
 */
#ifndef SKL_TEST_NODE_CLUSTER_H
#define SKL_TEST_NODE_CLUSTER_H

#include <arpa/inet.h>
#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#ifndef MAX_NODES
#error "define MAX_NODES before including node_cluster.h"
#endif

/* base: made and removed by cluster_main(); dir: one per test, under base. */
static char base[128], dir[256], conf_path[300];
static uint16_t base_port; /* the service port; node i listens on base_port + i */
static pid_t pids[MAX_NODES + 1];
static int sw_fd = -1; /* bound to 127.0.0.1:base_port */

static void rm_tree(const char *path)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", path);
}

static void kill_all(void)
{
	for (int i = 1; i <= MAX_NODES; i++)
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
			pids[i] = 0;
		}
}

/*
 * Write a config to path: n nodes on 127.0.0.1 (weights[i], NULL: all 1),
 * data in dir/n<id>, the "node" section's members node_params and, when
 * agent_params is not NULL, an "agent" section with those members.
 */
static const char *cluster_service_params = ""; /* more "service" members: ",\"replicas\":2" */

static void write_cluster_config(const char *path, int n, const int *weights,
				 const char *node_params, const char *agent_params)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"service\":{\"vip\":\"127.0.0.1\",\"port\":%u%s},\n", base_port,
		cluster_service_params);
	fprintf(f, "\"switches\":[{\"id\":1,\"name\":\"s1\",\"role\":\"one-arm\","
		   "\"ports\":[{\"name\":\"p\",\"vdev\":\"net_tap0,iface=t0\"}]}],\n\"nodes\":[");
	for (int i = 1; i <= n; i++)
		fprintf(f,
			"%s{\"id\":%d,\"name\":\"n%d\",\"ip\":\"127.0.0.1\",\"port\":%u,"
			"\"weight\":%d,\"data_dir\":\"%s/n%d\"}",
			i > 1 ? "," : "", i, i, base_port + i, weights ? weights[i - 1] : 1, dir,
			i);
	fprintf(f, "],\n\"node\":{%s}", node_params);
	if (agent_params)
		fprintf(f, ",\n\"agent\":{%s}", agent_params);
	fprintf(f, "}\n");
	fclose(f);
}

/* Start node id from conf_path ($SKL_NODE_BIN, log level warn, extra_arg if any). */
static pid_t spawn_node(int id, const char *extra_arg)
{
	const char *bin = getenv("SKL_NODE_BIN");
	char name[8];
	pid_t pid;

	ck_assert_msg(bin != NULL, "SKL_NODE_BIN not set");
	snprintf(name, sizeof(name), "%d", id);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(bin, bin, "--config", conf_path, "--node", name, "--log-level", "warn",
		      extra_arg ? extra_arg : (char *)NULL, (char *)NULL);
		_exit(127);
	}
	pids[id] = pid;
	return pid;
}

/*
 * Fixture: a fresh dir and conf_path; the service port from a range per test
 * process (port_base + (pid % slots) * 10, away from the usual 7447), bound
 * by sw_fd.
 */
static void cluster_setup(unsigned port_base, unsigned slots)
{
	struct sockaddr_in sw = {.sin_family = AF_INET};

	snprintf(dir, sizeof(dir), "%s/XXXXXX", base);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(conf_path, sizeof(conf_path), "%s/cluster.json", dir);
	base_port = (uint16_t)(port_base + ((unsigned)getpid() % slots) * 10);
	atexit(kill_all);
	sw.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sw.sin_port = htons(base_port);
	sw_fd = socket(AF_INET, SOCK_DGRAM, 0);
	ck_assert_int_eq(bind(sw_fd, (struct sockaddr *)&sw, sizeof(sw)), 0);
}

static void cluster_teardown(void)
{
	kill_all();
	close(sw_fd);
	rm_tree(dir);
}

/*
 * Run the suite in a scratch base folder /tmp/<prefix>-XXXXXX, removed
 * afterwards, so a test that fails (and exits early) leaves nothing behind.
 * Returns main()'s exit status.
 */
static int cluster_main(Suite *s, const char *prefix)
{
	SRunner *sr;
	int failed;

	snprintf(base, sizeof(base), "/tmp/%s-XXXXXX", prefix);
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	rm_tree(base);
	return failed ? 1 : 0;
}

#endif
