/*
 * test_config.c - both shipped configs load; each class of error gives its
 * documented message (docs/config.md, "Errors").
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "config.h"

static const char *root(void)
{
	const char *r = getenv("SKL_SOURCE_ROOT");

	return r ? r : ".";
}

START_TEST(testbed_config_loads)
{
	struct cfg *cfg = calloc(1, sizeof(*cfg));
	char path[512], err[CFG_ERR_LEN] = "";
	struct ring ring = {0};

	snprintf(path, sizeof(path), "%s/conf/testbed.json", root());
	ck_assert_msg(cfg_load(path, cfg, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(cfg->nnodes, 8);
	ck_assert_uint_eq(cfg->nswitches, 1);
	ck_assert_uint_eq(cfg->nagents, 1);
	ck_assert_uint_eq(cfg->service.port, 7447);
	ck_assert_uint_eq(cfg->switches[0].nports, 9);
	ck_assert_str_eq(cfg_node_lookup(cfg, "n3")->name, "n3");
	ck_assert_str_eq(cfg_node_lookup(cfg, "4")->name, "n4");
	ck_assert_ptr_null(cfg_node_lookup(cfg, "n9"));
	/* Defaults from docs/config.md. */
	ck_assert_uint_eq(cfg->digest.window, 5);
	ck_assert(cfg->digest.window_weights[4] == 5.0);
	ck_assert(cfg->digest.w_queue == 0.35);
	ck_assert_uint_eq(cfg->sync.score_delta_pct, 15);
	ck_assert_uint_eq(cfg->agent.route_cache_entries, 1000);
	ck_assert_uint_eq(cfg->service.max_value, 262144); /* chunked past the MTU */
	ck_assert_uint_eq(cfg_directory_top_k(cfg), 24); /* ceil(8 * log2 8) */
	ck_assert_int_eq(cfg_build_ring(cfg, &ring), 0);
	ck_assert_uint_eq(ring.npoints, 8 * 160);
	ring_free(&ring);
	free(cfg);
}
END_TEST

START_TEST(baremetal_config_loads)
{
	struct cfg *cfg = calloc(1, sizeof(*cfg));
	char path[512], err[CFG_ERR_LEN] = "";

	snprintf(path, sizeof(path), "%s/conf/baremetal.json", root());
	ck_assert_msg(cfg_load(path, cfg, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(cfg->switches[0].ports[0].pci, "0000:3b:00.0");
	ck_assert_uint_eq(cfg->service.mtu, 9000);
	free(cfg);
}
END_TEST

#define NODES2                                                                                     \
	"\"nodes\":[{\"id\":1,\"name\":\"n1\",\"ip\":\"10.0.0.1\"},"                               \
	"{\"id\":2,\"name\":\"n2\",\"ip\":\"10.0.0.2\"}]"
#define SERVICE "\"service\":{\"vip\":\"10.0.0.100\"}"

static void expect_error(const char *json, const char *message)
{
	struct cfg *cfg = calloc(1, sizeof(*cfg));
	char err[CFG_ERR_LEN] = "";

	ck_assert_int_eq(cfg_load_string(json, "conf/x.json", cfg, err, sizeof(err)), -1);
	ck_assert_str_eq(err, message);
	free(cfg);
}

START_TEST(minimal_config_gets_defaults)
{
	struct cfg *cfg = calloc(1, sizeof(*cfg));
	char err[CFG_ERR_LEN] = "";

	ck_assert_msg(cfg_load_string("{" SERVICE "," NODES2 "}", "x", cfg, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(cfg->nodes[1].port, 7447);
	ck_assert_uint_eq(cfg->nodes[1].weight, 1);
	ck_assert_str_eq(cfg->nodes[1].data_dir, "/var/lib/skewless/n2");
	ck_assert_int_eq(cfg->agent.mode, CFG_MODE_INPATH);
	ck_assert_int_eq(cfg->agent.consistency, CFG_LINEARIZABLE);
	ck_assert_uint_eq(cfg->agent.timeout_ms, 50);
	ck_assert_uint_eq(cfg->agent.deadline_ms, 500);
	ck_assert_uint_eq(cfg->agent.retries, 9);
	ck_assert_uint_eq(cfg->agent.loss_pct, 5);
	ck_assert_uint_eq(cfg->node.workers, 2);
	ck_assert_int_eq(cfg->node.durability, CFG_DURABILITY_SYNC);
	ck_assert_uint_eq(cfg->directory.epoch_ms, 100);
	ck_assert_uint_eq(cfg->digest.interval_ms, 100);
	ck_assert_uint_eq(cfg->nswitches, 0);
	free(cfg);
}
END_TEST

START_TEST(error_messages)
{
	expect_error("{" SERVICE ","
		     "\"nodes\":[{\"id\":1,\"name\":\"n1\",\"ip\":\"10.0.0.1\"},"
		     "{\"id\":2,\"name\":\"n2\",\"ip\":\"10.0.0.2\"},"
		     "{\"id\":3,\"name\":\"n3\",\"ip\":\"10.0.0.3\"},"
		     "{\"id\":4,\"name\":\"n4\",\"ip\":\"10.0.0.4\",\"port\":\"x\"}]}",
		     "conf/x.json: nodes[3].port: expected integer 1..65535, got \"x\"");
	/* Unknown key. */
	expect_error("{" SERVICE "," NODES2 ",\"colour\":1}",
		     "conf/x.json: colour: unknown key (expected one of: service, switches, "
		     "nodes, agents, ring, directory, digest, sync, agent, node, auth)");
	expect_error("{" SERVICE "," NODES2 ",\"directory\":{\"epoch\":1}}",
		     "conf/x.json: directory.epoch: unknown key (expected one of: enabled, "
		     "max_keys, top_k, epoch_ms, retire_epochs, max_replicas, replica_factor, push_cost, "
		     "batch_writes, spare_home_from, sample_every)");
	/* Wrong type. */
	expect_error("{" SERVICE "," NODES2 ",\"directory\":{\"enabled\":\"yes\"}}",
		     "conf/x.json: directory.enabled: expected true or false, got \"yes\"");
	/* Out of range. */
	expect_error("{" SERVICE "," NODES2 ",\"agent\":{\"timeout_ms\":0}}",
		     "conf/x.json: agent.timeout_ms: expected integer 1..60000, got 0");
	expect_error("{" SERVICE "," NODES2 ",\"directory\":{\"max_replicas\":129}}",
		     "conf/x.json: directory.max_replicas: expected integer 1..128, got 129");
	/* Bad enum. */
	expect_error("{" SERVICE "," NODES2 ",\"agent\":{\"mode\":\"fast\"}}",
		     "conf/x.json: agent.mode: expected one of \"inpath\", \"hint\", \"direct\", "
		     "got \"fast\"");
	/* Bad address. */
	expect_error("{\"service\":{\"vip\":\"10.0.0\"}," NODES2 "}",
		     "conf/x.json: service.vip: expected IPv4 address \"a.b.c.d\", got \"10.0.0\"");
	/* Missing required. */
	expect_error("{" NODES2 "}", "conf/x.json: service: missing (required)");
	expect_error("{" SERVICE ",\"nodes\":[{\"id\":1,\"ip\":\"10.0.0.1\"}]}",
		     "conf/x.json: nodes[0].name: missing (required)");
	expect_error("{" SERVICE "," NODES2
		     ",\"switches\":[{\"ports\":[{\"vdev\":\"net_null0\"}]}]}",
		     "conf/x.json: switches[0].id: missing (required)");
	/* Duplicates. */
	expect_error("{" SERVICE ",\"nodes\":[{\"id\":1,\"name\":\"n1\",\"ip\":\"10.0.0.1\"},"
		     "{\"id\":1,\"name\":\"n2\",\"ip\":\"10.0.0.2\"}]}",
		     "conf/x.json: nodes[1]: duplicate node id 1 (also nodes[0])");
	expect_error("{" SERVICE ",\"nodes\":[{\"id\":1,\"name\":\"n1\",\"ip\":\"10.0.0.1\"},"
		     "{\"id\":2,\"name\":\"n1\",\"ip\":\"10.0.0.2\"}]}",
		     "conf/x.json: nodes[1]: duplicate node name \"n1\" (also nodes[0])");
	expect_error("{" SERVICE ",\"nodes\":[{\"id\":1,\"name\":\"n1\",\"ip\":\"10.0.0.1\"},"
		     "{\"id\":2,\"name\":\"n2\",\"ip\":\"10.0.0.1\"}]}",
		     "conf/x.json: nodes[1]: duplicate node address (also nodes[0])");
	expect_error("{" SERVICE "," NODES2 ",\"agents\":[{\"name\":\"n1\",\"ip\":\"10.0.0.9\"}]}",
		     "conf/x.json: nodes[0]: name \"n1\" is also agents[0]");
	expect_error(
	    "{" SERVICE "," NODES2 ",\"switches\":["
	    "{\"id\":1,\"name\":\"s\",\"vip\":\"10.0.0.101\",\"ports\":[{\"vdev\":\"net_null0\"}]},"
	    "{\"id\":2,\"name\":\"s\",\"vip\":\"10.0.0.102\",\"ports\":[{\"vdev\":\"net_null1\"}]}]"
	    "}",
	    "conf/x.json: switches[1]: duplicate switch name \"s\" (also switches[0])");
	expect_error(
	    "{" SERVICE ",\"nodes\":[{\"id\":1,\"name\":\"n1\",\"ip\":\"10.0.0.1\"},"
	    "{\"id\":2,\"name\":\"1\",\"ip\":\"10.0.0.2\"}]}",
	    "conf/x.json: nodes[1]: name \"1\" is a number, which reads as a node id; give "
	    "it a name that is not");
	expect_error("{" SERVICE "," NODES2 ",\"directory\":{\"max_keys\":65536}}",
		     "conf/x.json: directory.max_keys: expected integer 1..65535, got 65536");
	expect_error("{" SERVICE "," NODES2
		     ",\"digest\":{\"window\":2,\"window_weights\":[1,1e308]}}",
		     "conf/x.json: digest.window_weights[1]: expected a number 0..1000000, got "
		     "1e+308");
	expect_error("{" SERVICE "," NODES2 ",\"switches\":[{\"id\":1,\"lcores\":[1,2,1],"
		     "\"ports\":[{\"vdev\":\"net_null0\"}]}]}",
		     "conf/x.json: switches[0].lcores[2]: 1 is listed twice (also [0])");
	/* Two switches on one control socket: the second would take the first's. */
	expect_error(
	    "{" SERVICE "," NODES2 ",\"switches\":["
	    "{\"id\":1,\"name\":\"a\",\"vip\":\"10.0.0.101\",\"control_socket\":\"/tmp/s\","
	    "\"ports\":[{\"vdev\":\"net_null0\"}]},"
	    "{\"id\":2,\"name\":\"b\",\"vip\":\"10.0.0.102\",\"control_socket\":\"/tmp/s\","
	    "\"ports\":[{\"vdev\":\"net_null1\"}]}]}",
	    "conf/x.json: switches[1]: duplicate control_socket \"/tmp/s\" (also "
	    "switches[0]); give each switch its own");
	/* Ports. */
	expect_error("{" SERVICE "," NODES2 ",\"switches\":[{\"id\":1,\"ports\":"
		     "[{\"vdev\":\"net_tap0\"}]}]}",
		     "conf/x.json: switches[0].ports[0]: net_tap vdev needs iface=NAME, got "
		     "\"net_tap0\"");
	expect_error("{" SERVICE "," NODES2 ",\"switches\":[{\"id\":1,\"ports\":"
		     "[{\"vdev\":\"net_af_packet0,qdisc_bypass=1\"}]}]}",
		     "conf/x.json: switches[0].ports[0]: net_af_packet vdev needs iface=NAME, got "
		     "\"net_af_packet0,qdisc_bypass=1\"");
	expect_error("{" SERVICE "," NODES2 ",\"switches\":[{\"id\":1,\"ports\":[{}]}]}",
		     "conf/x.json: switches[0].ports[0]: expected exactly one of \"vdev\" or "
		     "\"pci\"");
	/* Broken JSON. */
	expect_error("{\"service\":", "conf/x.json: line 1 column 11: invalid JSON: "
				      "unexpected token near end of file");
}
END_TEST

/* MACs: exactly six pairs of hex digits with colons; no signs, spaces or 0x. */
START_TEST(mac_parsing_is_strict)
{
	static const char *const bad[] = {
	    "-1:-1:-1:-1:-1:-1", "0x:0x:0x:0x:0x:0x",  " 2: 3: 4: 5: 6: 7",
	    "+2:+3:+4:+5:+6:+7", "02-00-00-00-00-01",  "02:00:00:00:00",
	    "02:00:00:00:00:0g", "02:00:00:00:00:011", ""};
	uint8_t mac[6];

	ck_assert_int_eq(cfg_parse_mac("02:aB:00:Ff:10:9e", mac), 0);
	ck_assert_uint_eq(mac[1], 0xab);
	ck_assert_uint_eq(mac[3], 0xff);
	ck_assert_uint_eq(mac[5], 0x9e);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(cfg_parse_mac(bad[i], mac) != 0, "\"%s\" accepted", bad[i]);
	expect_error("{\"service\":{\"vip\":\"10.0.0.100\",\"mac\":\"-1:-1:-1:-1:-1:-1\"}," NODES2
		     "}",
		     "conf/x.json: service.mac: expected MAC address \"xx:xx:xx:xx:xx:xx\", got "
		     "\"-1:-1:-1:-1:-1:-1\"");
}
END_TEST

/* Hex keys (cdtctl -> control socket): pairs of digits only, as the MAC parser takes them. */
START_TEST(hex_round_trip_and_strict)
{
	static const uint8_t bytes[] = {0x00, 0x7f, 0x80, 0xff, 'k'};
	static const char *const bad[] = {"", "0", "0g", "-1", " 1", "+1", "0x", "00112"};
	char hex[2 * sizeof(bytes) + 1];
	uint8_t back[8];
	size_t len;

	ck_assert_str_eq(cfg_format_hex(bytes, sizeof(bytes), hex), "007f80ff6b");
	ck_assert_int_eq(cfg_parse_hex(hex, back, sizeof(back), &len), 0);
	ck_assert_uint_eq(len, sizeof(bytes));
	ck_assert_int_eq(memcmp(back, bytes, len), 0);
	ck_assert_int_eq(cfg_parse_hex("AbCd", back, sizeof(back), &len), 0);
	ck_assert_uint_eq(back[0], 0xab);
	ck_assert_int_eq(cfg_parse_hex(hex, back, 4, &len), -1); /* does not fit */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(cfg_parse_hex(bad[i], back, sizeof(back), &len) != 0,
			      "\"%s\" accepted", bad[i]);
}
END_TEST

START_TEST(missing_file)
{
	struct cfg *cfg = calloc(1, sizeof(*cfg));
	char err[CFG_ERR_LEN] = "";

	ck_assert_int_eq(cfg_load("/nonexistent/x.json", cfg, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "/nonexistent/x.json: cannot open: No such file or directory");
	/* A directory, a FIFO (never waited on) and a file with a NUL byte in it. */
	ck_assert_int_eq(cfg_load("/tmp", cfg, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "/tmp: not a regular file");
	{
		char fifo[64], nul[64];
		FILE *f;

		snprintf(fifo, sizeof(fifo), "/tmp/skl-cfg-fifo-%d", (int)getpid());
		snprintf(nul, sizeof(nul), "/tmp/skl-cfg-nul-%d.json", (int)getpid());
		ck_assert_int_eq(mkfifo(fifo, 0600), 0);
		ck_assert_int_eq(cfg_load(fifo, cfg, err, sizeof(err)), -1);
		ck_assert(strstr(err, ": not a regular file") != NULL);
		unlink(fifo);
		f = fopen(nul, "w");
		ck_assert_ptr_nonnull(f);
		fwrite("{}\0garbage", 1, 10, f);
		fclose(f);
		ck_assert_int_eq(cfg_load(nul, cfg, err, sizeof(err)), -1);
		ck_assert(strstr(err, ": contains a NUL byte") != NULL);
		unlink(nul);
	}
	free(cfg);
}
END_TEST


/* Write text to dir/name with mode; returns the path in buf. */
static const char *write_file(const char *dir, const char *name, const char *text, mode_t mode,
			      char *buf, size_t cap)
{
	FILE *f;

	snprintf(buf, cap, "%s/%s", dir, name);
	f = fopen(buf, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	ck_assert_int_eq(chmod(buf, mode), 0);
	return buf;
}

/* auth.key_file: read next to the config, strict about length, digits and mode. */
START_TEST(key_file_read_and_checked)
{
	struct cfg *cfg = calloc(1, sizeof(*cfg));
	char err[CFG_ERR_LEN] = "", dir[64], conf[128], key[128];
	static const char hex[] =
	    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
	struct wire_key k;

	snprintf(dir, sizeof(dir), "/tmp/skl-cfg-key-%d", (int)getpid());
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	write_file(dir, "c.json", "{" SERVICE "," NODES2 "}", 0644, conf, sizeof(conf));
	ck_assert_msg(cfg_load(conf, cfg, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(cfg_read_key(cfg, &k, err, sizeof(err)), 0);
	ck_assert_uint_eq(k.len, 0);

	write_file(dir, "c.json", "{" SERVICE "," NODES2 ",\"auth\":{\"key_file\":\"k.hex\"}}",
		   0644, conf, sizeof(conf));
	ck_assert_msg(cfg_load(conf, cfg, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(cfg_read_key(cfg, &k, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "/k.hex: cannot open: No such file") != NULL, "%s", err);

	write_file(dir, "k.hex", "  00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n",
		   0600, key, sizeof(key));
	ck_assert_msg(cfg_read_key(cfg, &k, err, sizeof(err)) == 1, "%s", err);
	ck_assert_uint_eq(k.len, 32);
	ck_assert_uint_eq(k.bytes[0], 0x00);
	ck_assert_uint_eq(k.bytes[15], 0xff);
	ck_assert_uint_eq(k.bytes[31], 0xff);

	ck_assert_int_eq(chmod(key, 0640), 0);
	ck_assert_int_eq(cfg_read_key(cfg, &k, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "group or others may access it (mode 640); chmod 600 it"), "%s",
		      err);
	ck_assert_uint_eq(k.len, 0);

	write_file(dir, "k.hex", hex + 2, 0600, key, sizeof(key)); /* 62 digits: 31 bytes */
	ck_assert_int_eq(cfg_read_key(cfg, &k, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "expected 64..128 hex digits") && strstr(err, "got 62 characters"),
		      "%s", err);
	write_file(dir, "k.hex", "zz112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		   0600, key, sizeof(key));
	ck_assert_int_eq(cfg_read_key(cfg, &k, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "expected 64..128 hex digits"), "%s", err);

	/* An absolute path is taken as it is. */
	write_file(dir, "k.hex", hex, 0600, key, sizeof(key));
	snprintf(cfg->auth.key_file, sizeof(cfg->auth.key_file), "%s", key);
	snprintf(cfg->path, sizeof(cfg->path), "/elsewhere/c.json");
	ck_assert_msg(cfg_read_key(cfg, &k, err, sizeof(err)) == 1, "%s", err);

	unlink(key);
	unlink(conf);
	rmdir(dir);
	free(cfg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("load");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, testbed_config_loads);
	tcase_add_test(tc, baremetal_config_loads);
	tcase_add_test(tc, minimal_config_gets_defaults);
	tcase_add_test(tc, error_messages);
	tcase_add_test(tc, mac_parsing_is_strict);
	tcase_add_test(tc, hex_round_trip_and_strict);
	tcase_add_test(tc, missing_file);
	tcase_add_test(tc, key_file_read_and_checked);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
