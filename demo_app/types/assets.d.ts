// Metro resolves require('…/x.bin') to an asset id (see metro.config.js).
declare module '*.bin' {
  const assetId: number;
  export default assetId;
}
