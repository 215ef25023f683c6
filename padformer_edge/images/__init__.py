"""Camera images as the line reads them: decoding a file into RGB (``decode``) and the
luminance statistics drift watches (``image_stats``). No torch."""
