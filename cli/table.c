/*
 * cli/table.c: the commands of sandbox-e2b, in display order. Each
 * descriptor lives in the command's own file (cli/cmd/, cli/demo/).
 */
#include "command.h"

extern const cli_command cli_cmd_create, cli_cmd_resume, cli_cmd_suspend, cli_cmd_destroy,
    cli_cmd_destroy_by_name, cli_cmd_kill_all, cli_cmd_kill_tagged, cli_cmd_exec, cli_cmd_read,
    cli_cmd_write, cli_cmd_stat, cli_cmd_config, cli_cmd_demo, cli_cmd_serve, cli_cmd_list,
    cli_cmd_info, cli_cmd_ls, cli_cmd_ps, cli_cmd_wait, cli_cmd_kill, cli_cmd_rm, cli_cmd_mkdir,
    cli_cmd_mv, cli_cmd_set_timeout, cli_cmd_host, cli_cmd_metrics, cli_cmd_watch;

const cli_command *const cli_commands[] = {
    &cli_cmd_create,
    &cli_cmd_resume,
    &cli_cmd_suspend,
    &cli_cmd_destroy,
    &cli_cmd_destroy_by_name,
    &cli_cmd_list,
    &cli_cmd_info,
    &cli_cmd_set_timeout,
    &cli_cmd_host,
    &cli_cmd_metrics,
    &cli_cmd_exec,
    &cli_cmd_ps,
    &cli_cmd_wait,
    &cli_cmd_kill,
    &cli_cmd_kill_all,
    &cli_cmd_kill_tagged,
    &cli_cmd_read,
    &cli_cmd_write,
    &cli_cmd_stat,
    &cli_cmd_ls,
    &cli_cmd_mkdir,
    &cli_cmd_mv,
    &cli_cmd_rm,
    &cli_cmd_watch,
    &cli_cmd_config,
    &cli_cmd_demo,
    &cli_cmd_serve,
};

const size_t cli_ncommands = sizeof(cli_commands) / sizeof(cli_commands[0]);
