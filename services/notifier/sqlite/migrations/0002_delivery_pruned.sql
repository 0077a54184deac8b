-- Delivery rows of finished runs are pruned by age (retention, design §5):
-- this index finds the old delivered rows without reading the table.
-- Undelivered rows are not in it: their run may still be retried.
CREATE INDEX IF NOT EXISTS idx_delivery_delivered_at ON delivery (updated_at) WHERE delivered;
