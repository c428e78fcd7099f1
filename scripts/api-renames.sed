# api-renames.sed - the renames of libamq 0.2.0 (issue 18): one verb per idea.
# Apply to C, Python, shell and docs:  sed -i -f scripts/api-renames.sed FILES
# Safe to apply twice and to files already using the new names: no new name
# is the old name of another line.  Longest names first.
# Functions whose signature also changed (the compiler points at each call):
#   amq_*_add_batch*, amq_*_contains_batch* (int status; counts through a
#   uint64_t * out-parameter), amq_cuckoo_count/_count_hash and
#   amq_scuckoo_count/_count_hash (int status, uint64_t *count),
#   amq_policy_contains (int status, int *maybe).
s/\bamq_partitioned_contains_hashes\b/amq_partitioned_contains_batch/g
s/\bamq_blocked_contains_hashes64\b/amq_blocked_contains_batch64/g
s/\bamq_blocked_contains_hashes\b/amq_blocked_contains_batch/g
s/\bamq_partitioned_add_hashes\b/amq_partitioned_add_batch/g
s/\bamq_blocked_contains_fixed\b/amq_blocked_contains_batch_fixed/g
s/\bamq_partitioned_partition\b/amq_partitioned_partition_info/g
s/\bamq_blocked_contains_keys\b/amq_blocked_contains_batch_keys/g
s/\bamq_blocked_add_hashes64\b/amq_blocked_add_batch64/g
s/\bamq_partitioned_is_view\b/amq_partitioned_is_readonly/g
s/\bamq_sbloom_header_load\b/amq_sbloom_header_decode/g
s/\bamq_blocked_add_hashes\b/amq_blocked_add_batch/g
s/\bamq_partitioned_union\b/amq_partitioned_merge/g
s/\bamq_partitioned_count\b/amq_partitioned_partitions/g
s/\bamq_blocked_add_fixed\b/amq_blocked_add_batch_fixed/g
s/\bamq_policy_may_match\b/amq_policy_contains/g
s/\bamq_blocked_add_keys\b/amq_blocked_add_batch_keys/g
s/\bamq_blocked_is_view\b/amq_blocked_is_readonly/g
s/\bamq_cuckoo_is_view\b/amq_cuckoo_is_readonly/g
s/\bamq_blocked_union\b/amq_blocked_merge/g
s/\bamq_bloom_is_view\b/amq_bloom_is_readonly/g
s/\bamq_bloom_union\b/amq_bloom_merge/g
