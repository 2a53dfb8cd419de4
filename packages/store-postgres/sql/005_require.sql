-- 005_require: a guard a single statement can raise.
--
-- Same conditions as 001 (search_path = the store's schema, migration
-- advisory lock held).
--
-- A statement run on its own (autocommit) cannot be rolled back by the
-- client after it ran: when a data-modifying CTE finds a precondition false
-- (an enqueue's unique key already held), the statement calls
-- ojs_require(false, reason) and the error aborts all of it. SQLSTATE OJ001
-- tells the store to take the slow path (a transaction that judges the
-- holder in core).

CREATE FUNCTION ojs_require(ok boolean, reason text) RETURNS boolean
  LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF ok IS NOT TRUE THEN
    RAISE EXCEPTION USING ERRCODE = 'OJ001', MESSAGE = reason;
  END IF;
  RETURN true;
END
$$;
