/* linknames: the names common/'s functions carry in object files.
 *
 * The shared code is linked into programs, into libadafs (loaded into any
 * application) and into the Slurm plugin (loaded into slurmctld next to
 * libslurmfull). Its module prefixes (hostlist_, log_, net_, conf_, hash_)
 * are Slurm's too, so each function keeps its short name in C but is
 * linked as adafs_<name>, which nothing else defines. Hidden visibility
 * already keeps these names out of every shared object's exports; this
 * keeps them apart in static links and in debuggers as well.
 * Every common header includes this file first. A new function of common/
 * gets its line here (tests/test_exports.sh checks that every global
 * symbol of libadafs_common starts with adafs_). */
#ifndef ADAFS_LINKNAMES_H
#define ADAFS_LINKNAMES_H

/* agent_proto.h */
#pragma redefine_extname agent_configure_get adafs_agent_configure_get
#pragma redefine_extname agent_configure_put adafs_agent_configure_put
#pragma redefine_extname agent_error_get adafs_agent_error_get
#pragma redefine_extname agent_error_put adafs_agent_error_put
#pragma redefine_extname agent_fault_name adafs_agent_fault_name
#pragma redefine_extname agent_job_ref_get adafs_agent_job_ref_get
#pragma redefine_extname agent_job_ref_put adafs_agent_job_ref_put
#pragma redefine_extname agent_op_name adafs_agent_op_name
#pragma redefine_extname agent_instance_get adafs_agent_instance_get
#pragma redefine_extname agent_instance_put adafs_agent_instance_put
#pragma redefine_extname agent_persist_name_ok adafs_agent_persist_name_ok
#pragma redefine_extname agent_socket_path adafs_agent_socket_path
#pragma redefine_extname agent_stage_get adafs_agent_stage_get
#pragma redefine_extname agent_stage_put adafs_agent_stage_put
#pragma redefine_extname agent_stage_status_get adafs_agent_stage_status_get
#pragma redefine_extname agent_stage_status_put adafs_agent_stage_status_put
#pragma redefine_extname agent_start_get adafs_agent_start_get
#pragma redefine_extname agent_start_put adafs_agent_start_put
#pragma redefine_extname agent_started_get adafs_agent_started_get
#pragma redefine_extname agent_started_put adafs_agent_started_put
#pragma redefine_extname agent_watch_get adafs_agent_watch_get
#pragma redefine_extname agent_watch_put adafs_agent_watch_put
/* agent_link.h (libadafs_session) */
#pragma redefine_extname agent_link_call adafs_agent_link_call
#pragma redefine_extname agent_link_free adafs_agent_link_free
#pragma redefine_extname agent_link_new adafs_agent_link_new
#pragma redefine_extname agent_link_send adafs_agent_link_send
#pragma redefine_extname agent_link_send_many adafs_agent_link_send_many
#pragma redefine_extname agent_link_stats adafs_agent_link_stats
#pragma redefine_extname agent_reply_free adafs_agent_reply_free
/* instance.h */
#pragma redefine_extname instance_file_path adafs_instance_file_path
#pragma redefine_extname instance_format adafs_instance_format
#pragma redefine_extname instance_free adafs_instance_free
#pragma redefine_extname instance_local_name adafs_instance_local_name
#pragma redefine_extname instance_mount_path adafs_instance_mount_path
#pragma redefine_extname instance_named_file_path adafs_instance_named_file_path
#pragma redefine_extname instance_named_mount_path adafs_instance_named_mount_path
#pragma redefine_extname instance_parse adafs_instance_parse
#pragma redefine_extname instance_read adafs_instance_read
#pragma redefine_extname instance_ready_parse adafs_instance_ready_parse
#pragma redefine_extname instance_space adafs_instance_space
#pragma redefine_extname instance_write adafs_instance_write
#pragma redefine_extname secret_from_hex adafs_secret_from_hex
#pragma redefine_extname secret_generate adafs_secret_generate
#pragma redefine_extname secret_read_file adafs_secret_read_file
#pragma redefine_extname secret_to_hex adafs_secret_to_hex
#pragma redefine_extname secret_write_file adafs_secret_write_file
/* stage_report.h (libadafs_report) */
#pragma redefine_extname stage_report_add adafs_stage_report_add
#pragma redefine_extname stage_report_decode adafs_stage_report_decode
#pragma redefine_extname stage_report_encode adafs_stage_report_encode
#pragma redefine_extname stage_report_free adafs_stage_report_free
/* agent_session.h, munge_auth.h (libadafs_session) */
#pragma redefine_extname agent_session_accept adafs_agent_session_accept
#pragma redefine_extname agent_session_close adafs_agent_session_close
#pragma redefine_extname agent_session_connect adafs_agent_session_connect
#pragma redefine_extname agent_session_recv adafs_agent_session_recv
#pragma redefine_extname agent_session_recv_hello adafs_agent_session_recv_hello
#pragma redefine_extname agent_session_send adafs_agent_session_send
#pragma redefine_extname agent_session_send_id adafs_agent_session_send_id
#pragma redefine_extname agent_session_send_in_place adafs_agent_session_send_in_place
#pragma redefine_extname munge_auth_init adafs_munge_auth_init
#pragma redefine_extname session_handshake_clear adafs_session_handshake_clear
#pragma redefine_extname session_fanout_clear adafs_session_fanout_clear
#pragma redefine_extname session_fanout_hello adafs_session_fanout_hello
#pragma redefine_extname session_fanout_make adafs_session_fanout_make
#pragma redefine_extname session_ciphers adafs_session_ciphers
#pragma redefine_extname session_hello_make adafs_session_hello_make
#pragma redefine_extname session_hello_take adafs_session_hello_take
#pragma redefine_extname session_keys_use adafs_session_keys_use
#pragma redefine_extname session_open adafs_session_open
#pragma redefine_extname session_open_in_place adafs_session_open_in_place
#pragma redefine_extname session_plain_decode adafs_session_plain_decode
#pragma redefine_extname session_reply_make adafs_session_reply_make
#pragma redefine_extname session_reply_take adafs_session_reply_take
#pragma redefine_extname session_seal adafs_session_seal
#pragma redefine_extname session_seal_id adafs_session_seal_id
#pragma redefine_extname session_seal_in_place adafs_session_seal_in_place
/* conf.h */
#pragma redefine_extname conf_free adafs_conf_free
#pragma redefine_extname conf_load adafs_conf_load
#pragma redefine_extname conf_parse adafs_conf_parse
/* daemon.h */
#pragma redefine_extname daemon_signals adafs_daemon_signals
#pragma redefine_extname daemon_start adafs_daemon_start
/* fileio.h */
#pragma redefine_extname fileio_read_all adafs_fileio_read_all
#pragma redefine_extname fileio_write_all adafs_fileio_write_all
#pragma redefine_extname fileio_replace adafs_fileio_replace
/* hash.h */
#pragma redefine_extname hash_bytes adafs_hash_bytes
#pragma redefine_extname hash_place_chunk adafs_hash_place_chunk
#pragma redefine_extname hash_place_path adafs_hash_place_path
/* hostlist.h */
#pragma redefine_extname hostlist_compress adafs_hostlist_compress
#pragma redefine_extname hostlist_expand adafs_hostlist_expand
#pragma redefine_extname hostlist_free adafs_hostlist_free
#pragma redefine_extname hostlist_push adafs_hostlist_push
#pragma redefine_extname hostlist_valid_name adafs_hostlist_valid_name
/* log.h */
#pragma redefine_extname log_close adafs_log_close
#pragma redefine_extname log_level_parse adafs_log_level_parse
#pragma redefine_extname log_limit_flush adafs_log_limit_flush
#pragma redefine_extname log_limited adafs_log_limited
#pragma redefine_extname log_msg adafs_log_msg
#pragma redefine_extname log_open adafs_log_open
#pragma redefine_extname log_set_level adafs_log_set_level
#pragma redefine_extname log_set_sink adafs_log_set_sink
#pragma redefine_extname log_vmsg adafs_log_vmsg
/* net.h */
#pragma redefine_extname net_connect adafs_net_connect
#pragma redefine_extname net_connect_abstract adafs_net_connect_abstract
#pragma redefine_extname net_connect_unix adafs_net_connect_unix
#pragma redefine_extname net_fds_close adafs_net_fds_close
#pragma redefine_extname net_fds_take adafs_net_fds_take
#pragma redefine_extname net_listen adafs_net_listen
#pragma redefine_extname net_listen_abstract adafs_net_listen_abstract
#pragma redefine_extname net_listen_unix adafs_net_listen_unix
#pragma redefine_extname net_now_ms adafs_net_now_ms
#pragma redefine_extname net_parse_hostport adafs_net_parse_hostport
#pragma redefine_extname net_read_full adafs_net_read_full
#pragma redefine_extname net_read_some adafs_net_read_some
#pragma redefine_extname net_read_some_fds adafs_net_read_some_fds
#pragma redefine_extname net_set_nodelay adafs_net_set_nodelay
#pragma redefine_extname net_set_timeouts adafs_net_set_timeouts
#pragma redefine_extname net_set_unix_sndbuf adafs_net_set_unix_sndbuf
#pragma redefine_extname net_wall_after_ms adafs_net_wall_after_ms
#pragma redefine_extname net_write_full adafs_net_write_full
#pragma redefine_extname net_writev_fd adafs_net_writev_fd
#pragma redefine_extname net_writev_full adafs_net_writev_full
/* pathnorm.h */
#pragma redefine_extname path_normalise adafs_path_normalise
#pragma redefine_extname path_normalise_through adafs_path_normalise_through
/* privdrop.h */
#pragma redefine_extname privdrop_lookup adafs_privdrop_lookup
#pragma redefine_extname privdrop_to adafs_privdrop_to
/* qos_attach.h (libadafs_qos) */
#pragma redefine_extname qos_attach_answer adafs_qos_attach_answer
#pragma redefine_extname qos_attach_rep_decode adafs_qos_attach_rep_decode
#pragma redefine_extname qos_attach_rep_encode adafs_qos_attach_rep_encode
#pragma redefine_extname qos_attach_req_decode adafs_qos_attach_req_decode
#pragma redefine_extname qos_attach_req_encode adafs_qos_attach_req_encode
/* qos_client.h (libadafs_qos) */
#pragma redefine_extname qos_charge_slow adafs_qos_charge_slow
#pragma redefine_extname qos_client_after_fork adafs_qos_client_after_fork
#pragma redefine_extname qos_client_await adafs_qos_client_await
#pragma redefine_extname qos_client_conf_from_env adafs_qos_client_conf_from_env
#pragma redefine_extname qos_client_init adafs_qos_client_init
#pragma redefine_extname qos_client_on adafs_qos_client_on
#pragma redefine_extname qos_client_state adafs_qos_client_state
#pragma redefine_extname qos_epoch adafs_qos_epoch
#pragma redefine_extname qos_tls adafs_qos_tls
/* qos_conf.h (libadafs_qosctl) */
#pragma redefine_extname qos_conf_defaults adafs_qos_conf_defaults
#pragma redefine_extname qos_conf_free adafs_qos_conf_free
#pragma redefine_extname qos_conf_job_env adafs_qos_conf_job_env
#pragma redefine_extname qos_conf_load adafs_qos_conf_load
#pragma redefine_extname qos_conf_set adafs_qos_conf_set
#pragma redefine_extname qos_directive_find adafs_qos_directive_find
#pragma redefine_extname qos_policy_from_name adafs_qos_policy_from_name
#pragma redefine_extname qos_policy_name adafs_qos_policy_name
/* qos_limits.h (libadafs_qos) */
#pragma redefine_extname qos_class_from_name adafs_qos_class_from_name
#pragma redefine_extname qos_class_name adafs_qos_class_name
#pragma redefine_extname qos_limits_any adafs_qos_limits_any
#pragma redefine_extname qos_limits_check_max adafs_qos_limits_check_max
#pragma redefine_extname qos_limits_format adafs_qos_limits_format
#pragma redefine_extname qos_limits_merge adafs_qos_limits_merge
#pragma redefine_extname qos_limits_parse adafs_qos_limits_parse
#pragma redefine_extname qos_value_format adafs_qos_value_format
/* qos_paths.h (libadafs_qos) */
#pragma redefine_extname qos_path_plain adafs_qos_path_plain
#pragma redefine_extname qos_path_scan adafs_qos_path_scan
#pragma redefine_extname qos_paths_above adafs_qos_paths_above
#pragma redefine_extname qos_paths_match adafs_qos_paths_match
#pragma redefine_extname qos_paths_parse adafs_qos_paths_parse
#pragma redefine_extname qos_paths_under adafs_qos_paths_under
/* qos_proto.h (libadafs_qosctl) */
#pragma redefine_extname qos_classes_put adafs_qos_classes_put
#pragma redefine_extname qos_cycle_get adafs_qos_cycle_get
#pragma redefine_extname qos_cycle_put adafs_qos_cycle_put
#pragma redefine_extname qos_report_get adafs_qos_report_get
#pragma redefine_extname qos_report_get_into adafs_qos_report_get_into
#pragma redefine_extname qos_report_put adafs_qos_report_put
#pragma redefine_extname qos_status_get adafs_qos_status_get
#pragma redefine_extname qos_status_put adafs_qos_status_put
/* qos_seg.h (libadafs_qos) */
#pragma redefine_extname qos_seg_beat adafs_qos_seg_beat
#pragma redefine_extname qos_seg_claim adafs_qos_seg_claim
#pragma redefine_extname qos_seg_collect adafs_qos_seg_collect
#pragma redefine_extname qos_seg_create adafs_qos_seg_create
#pragma redefine_extname qos_seg_init adafs_qos_seg_init
#pragma redefine_extname qos_seg_map adafs_qos_seg_map
#pragma redefine_extname qos_seg_release adafs_qos_seg_release
#pragma redefine_extname qos_seg_reserve adafs_qos_seg_reserve
#pragma redefine_extname qos_seg_set_limits adafs_qos_seg_set_limits
#pragma redefine_extname qos_seg_unmap adafs_qos_seg_unmap
/* rpc.h */
#pragma redefine_extname rpc_get_bytes adafs_rpc_get_bytes
#pragma redefine_extname rpc_get_i64 adafs_rpc_get_i64
#pragma redefine_extname rpc_get_rest adafs_rpc_get_rest
#pragma redefine_extname rpc_get_str adafs_rpc_get_str
#pragma redefine_extname rpc_get_u32 adafs_rpc_get_u32
#pragma redefine_extname rpc_get_u64 adafs_rpc_get_u64
#pragma redefine_extname rpc_header_decode adafs_rpc_header_decode
#pragma redefine_extname rpc_header_encode adafs_rpc_header_encode
#pragma redefine_extname rpc_patch_u32 adafs_rpc_patch_u32
#pragma redefine_extname rpc_put_bytes adafs_rpc_put_bytes
#pragma redefine_extname rpc_put_i64 adafs_rpc_put_i64
#pragma redefine_extname rpc_put_raw adafs_rpc_put_raw
#pragma redefine_extname rpc_put_str adafs_rpc_put_str
#pragma redefine_extname rpc_put_u32 adafs_rpc_put_u32
#pragma redefine_extname rpc_put_u64 adafs_rpc_put_u64
#pragma redefine_extname rpc_reader_done adafs_rpc_reader_done
#pragma redefine_extname rpc_reader_init adafs_rpc_reader_init
#pragma redefine_extname rpc_writer_free adafs_rpc_writer_free
#pragma redefine_extname rpc_writer_init adafs_rpc_writer_init
/* rpc_io.h */
#pragma redefine_extname rpc_recv adafs_rpc_recv
#pragma redefine_extname rpc_send adafs_rpc_send
/* size.h */
#pragma redefine_extname count_parse adafs_count_parse
#pragma redefine_extname size_format adafs_size_format
#pragma redefine_extname size_parse adafs_size_parse
/* strbuf.h */
#pragma redefine_extname strbuf_append adafs_strbuf_append
#pragma redefine_extname strbuf_free adafs_strbuf_free
#pragma redefine_extname strbuf_printf adafs_strbuf_printf
#pragma redefine_extname strbuf_take adafs_strbuf_take

#endif
