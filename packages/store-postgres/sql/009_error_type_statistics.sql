-- 009_error_type_statistics: planner statistics on a job's latest error type.
--
-- A listing filtered by error type (state=discarded&error_type=Timeout)
-- walks the (state, seq) index and checks the type row by row, which stops
-- after one page when the type is common. Without statistics the planner
-- guesses the condition keeps 0.5% of the rows, expects a long walk, and
-- reads and sorts every discarded job instead (57 ms at 1,000,000 jobs).
-- Expression statistics (PostgreSQL 14+) cost nothing on writes; ANALYZE
-- computes them.
--
-- Same conditions as 001.

CREATE STATISTICS jobs_error_type ON ((doc -> 'error' ->> 'type')) FROM jobs;
