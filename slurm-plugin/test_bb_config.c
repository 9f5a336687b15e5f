#include "bb_config.h"
#include "stageout_bounds.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char path[] = "/tmp/test_bb_config.XXXXXX";
static char err[512];

static int load_text(const char *text, struct bb_config *cfg)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return bb_config_load(path, cfg, err, sizeof(err));
}

static void rejected(const char *text, const char *want)
{
    struct bb_config cfg;
    int rc = load_text(text, &cfg);
    tap_ok(rc == -1 && strstr(err, want), "rejects, saying '%s' (got %d: %s)", want, rc, err);
    bb_config_free(&cfg);
}

int main(void)
{
    int fd = mkstemp(path);
    close(fd);
    struct bb_config cfg;

    tap_is_int(bb_config_load("/nonexistent/burst_buffer.conf", &cfg, err, sizeof(err)), 1,
               "missing file: defaults, and the caller is told");
    tap_is_str(cfg.directive, "BB_ADAFS", "default directive");
    tap_is_int(cfg.access, BB_ACCESS_BOTH, "default access: both");
    bb_config_free(&cfg);
    tap_is_int(load_text("AdafsAccess=preload\n", &cfg), 0, "AdafsAccess=preload loads");
    tap_is_int(cfg.access, BB_ACCESS_PRELOAD, "and is the default access");
    bb_config_free(&cfg);

    tap_is_int(load_text("# adafs\nAllowUsers=root,65534\nStageInTimeout=60\n"
                         "Flags=PrivateData\nadafschunksize=1M\nAdafsAgentPortOffset=100\n"
                         "AdafsServerTimeout=3\nAdafsStoragePath = /tmp/adafs store \n", &cfg),
               0, "a full file loads");
    tap_is_int(cfg.allow_count, 2, "two allowed users");
    tap_is_int(cfg.stage_in_timeout, 60, "StageInTimeout");
    tap_is_int(cfg.flags, BBCONF_PRIVATE_DATA, "Flags");
    tap_is_int(cfg.chunk_size, 1 << 20, "keys are case-insensitive");
    tap_is_int(cfg.agent_port_offset, 100, "port offset");
    tap_is_int(cfg.server_timeout_ms, 3000, "timeout in ms");
    tap_is_str(cfg.storage_path, "/tmp/adafs store", "values are trimmed, inner blanks kept");
    tap_is_int(bb_config_check_user(&cfg, 0, err, sizeof(err)), 0, "root allowed");
    tap_is_int(bb_config_check_user(&cfg, 1000, err, sizeof(err)), -1, "uid 1000 not allowed");
    bb_config_free(&cfg);

    rejected("StageInTimeout=60\nFrobnicate=1\n", "line 2: unknown key 'Frobnicate'");
    rejected("StageInTimeout=soon\n", "line 1: invalid value 'soon' for StageInTimeout");
    rejected("AllowUsers=nosuchuser_adafs\n", "no such user 'nosuchuser_adafs'");
    rejected("Flags=PrivateData,Bogus\n", "unknown flag 'Bogus'");
    rejected("AdafsChunkSize=3K\n", "power of two");
    /* Checks made once the whole file is read still name the line and value. */
    rejected("Directive=BB_ADAFS\nAdafsChunkSize=3K\n", " line 2: AdafsChunkSize=3K must be");
    rejected("# site\nAdafsAccess=kernel\n", " line 2: AdafsAccess=kernel: expected");
    rejected("AdafsMountPrefix=adafs\n", " line 1: AdafsMountPrefix=adafs must be an absolute path");
    rejected("\nDirective=BB ADAFS\n", " line 2: Directive='BB ADAFS' must be one word");
    /* Empty (also what '#' leaves, a comment's start) would make every '# ...' line a directive. */
    rejected("Directive=#BB_ADAFS\n", " line 1: Directive='' must be one word");
    rejected("AdafsAgentPort=0\n", "AdafsAgentPort");
    rejected("just words\n", "line 1: expected Key=Value");
    tap_is_int(load_text("AdafsWalltimeMissRate=2.5%\n", &cfg), 0, "a miss rate in percent loads");
    tap_ok(cfg.walltime_miss_rate == 0.025, "AdafsWalltimeMissRate=2.5%% is 0.025");
    bb_config_free(&cfg);
    tap_is_int(load_text("AdafsWalltimeModel=/x\n", &cfg), 0, "without it...");
    tap_ok(cfg.walltime_miss_rate == 0.05, "... the miss rate is 5%%");
    tap_is_int(cfg.walltime_learn_interval, 30, "... and finished jobs are learned every 30 s");
    bb_config_free(&cfg);
    rejected("AdafsWalltimeMissRate=0\n", "invalid value '0' for AdafsWalltimeMissRate");
    rejected("AdafsWalltimeMissRate=60%\n", "invalid value '60%' for AdafsWalltimeMissRate");
    rejected("AdafsWalltimeMissRate=5x\n", "invalid value '5x' for AdafsWalltimeMissRate");
    tap_is_int(load_text("AdafsPersistentNodes=n[1-3],gpu7\n", &cfg), 0, "AdafsPersistentNodes loads");
    tap_ok(cfg.persistent_nodes.count == 4 && strcmp(cfg.persistent_nodes.names[3], "gpu7") == 0 &&
           strcmp(cfg.persistent_nodes_str, "n[1-3],gpu7") == 0, "as four nodes, and as written");
    bb_config_free(&cfg);
    tap_is_int(load_text("AdafsAccess=both\n", &cfg), 0, "without it...");
    tap_ok(cfg.persistent_nodes.count == 0 && !cfg.persistent_nodes_str, "... no persistent nodes");
    bb_config_free(&cfg);
    rejected("StageInTimeout=1\nAdafsPersistentNodes=n[1-\n", "line 2: AdafsPersistentNodes=n[1-:");
    rejected("AdafsWalltimeLearnInterval=0\n", "AdafsWalltimeLearnInterval must be at least 1 second");
    rejected("AdafsAccess=kernel\n", "AdafsAccess=kernel: expected preload, fuse or both");
    tap_is_int(load_text("AdafsAccess=both\n", &cfg), 0, "by default a node's stage worker...");
    tap_ok(bb_stage_threads(&cfg, 1) == 2 && bb_stage_threads(&cfg, 3) == 6 &&
           bb_stage_threads(&cfg, 64) == 8 && bb_stage_threads(&cfg, 0) == 8,
           "... runs 2 threads per CPU the job has there, at most 8 (8 when not known)");
    bb_config_free(&cfg);
    tap_is_int(load_text("AdafsStageThreads=16\nAdafsStageThreadsPerCpu=0\n", &cfg), 0,
               "AdafsStageThreadsPerCpu=0 loads...");
    tap_ok(bb_stage_threads(&cfg, 1) == 16 && bb_stage_threads(&cfg, 64) == 16,
           "... and gives every node AdafsStageThreads, whatever its CPUs");
    bb_config_free(&cfg);
    tap_is_int(load_text("AdafsMungeSocket=/run/munge/b.socket\n", &cfg), 0, "AdafsMungeSocket loads");
    tap_ok(!bb_config_munge_socket_changed("/run/munge/b.socket", &cfg),
           "the socket in use again: not a change");
    tap_ok(bb_config_munge_socket_changed("/run/munge/a.socket", &cfg), "another one: a change");
    tap_ok(bb_config_munge_socket_changed(NULL, &cfg), "one where munge's default was used: a change");
    bb_config_free(&cfg);
    tap_is_int(load_text("", &cfg), 0, "no AdafsMungeSocket");
    tap_ok(!bb_config_munge_socket_changed(NULL, &cfg), "munge's default again: not a change");
    tap_ok(bb_config_munge_socket_changed("/run/munge/a.socket", &cfg),
           "munge's default where a socket was named: a change");
    bb_config_free(&cfg);
    tap_is_int(bb_config_load("/nonexistent/burst_buffer.conf", &cfg, err, sizeof(err)), 1,
               "the defaults again");
    tap_ok(bb_config_release_needed_s(&cfg) <= STAGEOUT_RELEASE_DEFAULT_S &&
           bb_config_release_needed_s(&cfg) >= (uint64_t)cfg.stage_out_timeout + cfg.stage_out_keep,
           "with the defaults the Epilog's default --timeout covers stage-out and the keep "
           "(%llu s needed)", (unsigned long long)bb_config_release_needed_s(&cfg));
    bb_config_free(&cfg);
    tap_is_int(load_text("StageOutTimeout=90000\n", &cfg), 0, "a longer StageOutTimeout loads");
    tap_ok(bb_config_release_needed_s(&cfg) == 90000 + 3600 + STAGEOUT_RELEASE_SLACK_S &&
           bb_config_release_needed_s(&cfg) > STAGEOUT_RELEASE_DEFAULT_S,
           "and needs more than the Epilog's default (the plugin says so at load)");
    bb_config_free(&cfg);
    tap_is_int(load_text("StageOutTimeout=90000\nFlags=TeardownFailure\n", &cfg), 0,
               "with Flags=TeardownFailure");
    tap_ok(bb_config_release_needed_s(&cfg) == 90000 + STAGEOUT_RELEASE_SLACK_S,
           "nothing is kept: the keep does not count");
    bb_config_free(&cfg);
    unlink(path);
    return tap_done();
}
