/*
 * cmd_redis.h - amq export --to redis / amq import --from redis (cmd_redis.c), reached from
 * amq export / amq import when their format is redis.
 */
#ifndef AMQ_CLI_CMD_REDIS_H
#define AMQ_CLI_CMD_REDIS_H

int cmd_export_redis(int argc, char **argv);
int cmd_import_redis(int argc, char **argv);

/* 1 when f has a RedisBloom form (a BF or CF key): a scalable kind in RedisBloom's layout, or
 * a classic Bloom filter hashed and probed as RedisBloom does; else it exports as AMQ.*. */
struct amq_filter;
int cli_redisbloom_form(struct amq_filter *f);

/* cmd_redis_shard.c: 1 when argv has --shards before any "--"; the sharded forms. */
int cli_redis_sharded(int argc, char **argv);
int cmd_export_redis_sharded(int argc, char **argv);
int cmd_import_redis_sharded(int argc, char **argv);

#endif /* AMQ_CLI_CMD_REDIS_H */
