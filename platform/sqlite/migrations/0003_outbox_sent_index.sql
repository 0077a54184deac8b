-- Sent outbox rows are pruned by age (retention, design §5): this index
-- finds them without scanning the outbox. Unsent rows are not in it.
CREATE INDEX IF NOT EXISTS idx_outbox_sent ON outbox (sent_at) WHERE sent_at IS NOT NULL;
