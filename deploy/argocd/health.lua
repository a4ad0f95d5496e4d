-- Argo CD health of the objects of every gpucloud.io kind, from the
-- kstatus-style conditions the operator writes. Argo CD runs it with `obj` set.
local hs = { status = "Progressing", message = "Waiting for the operator" }

local function condition(conditions, kind)
  if conditions == nil then return nil end
  for _, c in ipairs(conditions) do
    if c.type == kind then return c end
  end
  return nil
end

local annotations = obj.metadata and obj.metadata.annotations
if annotations ~= nil and annotations["gpucloud.io/paused"] == "true" then
  hs.status = "Suspended"
  hs.message = "Paused by the gpucloud.io/paused annotation"
  return hs
end

if obj.metadata.deletionTimestamp ~= nil then
  hs.message = "Being deleted: the operator is removing the platform resource"
  return hs
end

local status = obj.status
if status == nil or status.conditions == nil then
  return hs
end

local generation = obj.metadata.generation
if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  hs.message = "Waiting for the operator to observe generation " .. tostring(generation)
  return hs
end

local stalled = condition(status.conditions, "Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = stalled.message or stalled.reason or "Stalled"
  return hs
end

local reconciling = condition(status.conditions, "Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  hs.message = reconciling.message or reconciling.reason or "Reconciling"
  return hs
end

local ready = condition(status.conditions, "Ready")
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = ready.message or "Ready"
  return hs
end

if ready ~= nil then
  hs.message = ready.message or ready.reason or "Not ready"
end
return hs
